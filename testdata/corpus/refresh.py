#!/usr/bin/env python3
"""Regenerate testdata/corpus/agui-benchmark from a clone of
github.com/namastexlabs/agui-benchmark.

    python3 testdata/corpus/refresh.py PATH-TO-CLONE [RUN-DIR [RUN]]

RUN-DIR defaults to benchmark-runs/20260206-114716 and RUN to run1, the run
the copy was made from. Only the agents already under agui-benchmark/ are
refreshed (the others of that run are not used by the tests); each response
line becomes one SSE frame with the recorder's own keys removed, and each
request is copied as it is.
"""
import json
import os
import sys

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "agui-benchmark")
clone = sys.argv[1]
rundir = sys.argv[2] if len(sys.argv) > 2 else "benchmark-runs/20260206-114716"
run = sys.argv[3] if len(sys.argv) > 3 else "run1"
recorder_keys = ("_timestamp", "_offset_ms", "_index")

for agent in sorted(os.listdir(here)):
    src = os.path.join(clone, rundir, agent)
    for name in sorted(os.listdir(os.path.join(here, agent))):
        if not name.endswith(".sse"):
            continue
        prompt = name[: -len(".sse")]
        case = os.path.join(src, run + "-" + prompt)
        frames = []
        with open(os.path.join(case, "response.jsonl"), encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    event = json.loads(line)
                    for k in recorder_keys:
                        event.pop(k, None)
                    frames.append("data: " + json.dumps(event) + "\n\n")
        with open(os.path.join(here, agent, name), "w", encoding="utf-8") as f:
            f.write("".join(frames))
        with open(os.path.join(case, "request.json"), "rb") as f:
            request = f.read()
        with open(os.path.join(here, agent, prompt + ".request.json"), "wb") as f:
            f.write(request)
