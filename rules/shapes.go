package rules

import (
	"sort"

	"github.com/agui-relay/agui-relay/negotiate"
)

// The shape tables: what each consumer release reads, built as a history.
// base0027 is the oldest release measured; every later release is the one
// before it plus the edits its changelog row lists (shared reference:
// legacy-profiles.md §2, §3; 1.0 from protocol-1.0.md §1, the zod 1.0.0
// reading). Releases with no wire change share the previous table.

// history lists the releases with a wire change, oldest first.
var history = buildHistory()

func buildHistory() []*schema {
	b := base0027()
	b.link()
	h := []*schema{b}
	for _, d := range deltas {
		s := h[len(h)-1].clone(negotiate.MustParse(d.version), d.why)
		d.edit(s)
		s.link()
		h = append(h, s)
	}
	return h
}

// schemaFor returns the table a consumer of v reads: the newest release not
// newer than v. A version newer than 1.0 reads the 1.0 table (the newest the
// relay knows); one older than 0.0.27 reads 0.0.27.
func schemaFor(v negotiate.Version) *schema {
	i := sort.Search(len(history), func(i int) bool { return v.Less(history[i].version) })
	if i == 0 {
		return history[0]
	}
	return history[i-1]
}

// reasoningRole is REASONING_MESSAGE_START.role: the literal "reasoning".
// Python SDK releases of the 0.0.x era sent "assistant" (ag-ui issue 1169),
// which the TypeScript readers never accepted: a retired shape the relay
// upgrades, not a malformed value.
func reasoningRole() field {
	f := req("role", tEnum("reasoning"))
	f.oldValue, f.oldShape = "assistant", ReasoningRoleAssistant
	return f
}

// Event field sets shared by several event types.
func msgID() field  { return req("messageId", tString) }
func callID() field { return req("toolCallId", tString) }

// base0027 is client 0.0.27: 16 event types, five message roles with string
// content, a RunAgentInput whose tools and context are required.
func base0027() *schema {
	s := &schema{
		version:            negotiate.MustParse("0.0.27"),
		why:                "oldest measured release",
		objects:            map[string]*object{},
		unions:             map[string]*union{},
		events:             map[string]bool{},
		retiredEvents:      map[string]string{},
		unknownEventFatal:  true,
		unknownMemberFatal: true,
	}
	s.base = []field{opt("timestamp", tNumber), anyOpt("rawEvent")}
	s.addEvent("TEXT_MESSAGE_START", msgID(), req("role", tEnum("assistant")))
	s.addEvent("TEXT_MESSAGE_CONTENT", msgID(), req("delta", tNonEmpty()))
	s.addEvent("TEXT_MESSAGE_END", msgID())
	s.addEvent("TOOL_CALL_START", callID(), req("toolCallName", tString), opt("parentMessageId", tString))
	s.addEvent("TOOL_CALL_ARGS", callID(), req("delta", tString))
	s.addEvent("TOOL_CALL_END", callID())
	s.addEvent("STATE_SNAPSHOT", anyOpt("snapshot")) // z.any() takes undefined
	s.addEvent("STATE_DELTA", req("delta", tArray(tAny)))
	s.addEvent("MESSAGES_SNAPSHOT", req("messages", tArray(tUnion("Message"))))
	s.addEvent("RAW", anyOpt("event"), opt("source", tString))
	s.addEvent("CUSTOM", req("name", tString), anyOpt("value"))
	s.addEvent("RUN_STARTED", req("threadId", tString), req("runId", tString))
	s.addEvent("RUN_FINISHED", req("threadId", tString), req("runId", tString))
	s.addEvent("RUN_ERROR", req("message", tString), opt("code", tString))
	s.addEvent("STEP_STARTED", req("stepName", tString))
	s.addEvent("STEP_FINISHED", req("stepName", tString))

	s.unions["Message"] = &union{disc: "role", rule: "unknown-role", members: map[string]string{}}
	s.addMessage("developer", req("content", tString), opt("name", tString))
	s.addMessage("system", req("content", tString), opt("name", tString))
	s.addMessage("assistant", opt("content", tString), opt("name", tString), opt("toolCalls", tArray(tObj("ToolCall"))))
	s.addMessage("user", req("content", tString), opt("name", tString))
	s.addMessage("tool", req("content", tString), req("toolCallId", tString))
	s.addObject("ToolCall", object{name: "ToolCall", fields: []field{
		req("id", tString), req("type", tEnum("function")), req("function", tObj("FunctionCall"))}})
	s.addObject("FunctionCall", object{name: "ToolCall.function", fields: []field{
		req("name", tString), req("arguments", tString)}})

	s.addObject("RunAgentInput", object{name: "RunAgentInput", fields: []field{
		req("threadId", tString), req("runId", tString), anyOpt("state"),
		req("messages", tArray(tUnion("Message"))),
		req("tools", tArray(tObj("Tool"))), req("context", tArray(tObj("Context"))),
		anyOpt("forwardedProps")}})
	s.addObject("Tool", object{name: "Tool", fields: []field{
		req("name", tString), req("description", tString), anyOpt("parameters")}})
	s.addObject("Context", object{name: "Context", fields: []field{
		req("description", tString), req("value", tString)}})
	return s
}

// addMessage adds a message role: its discriminator and id come first.
func (s *schema) addMessage(role string, fs ...field) {
	name := "Message(" + role + ")"
	all := append([]field{req("id", tString), req("role", tEnum(role))}, fs...)
	s.addObject(name, object{name: name, fields: all})
	s.unions["Message"].members[role] = name
}

// addMember adds a member to a discriminated union.
func (s *schema) addMember(un, value, name string, fs ...field) {
	u := s.unions[un]
	all := append([]field{req(u.disc, tEnum(value))}, fs...)
	s.addObject(name, object{name: name, fields: all})
	u.members[value] = name
}

// eachEvent applies an edit to every event type, sorted for determinism.
func (s *schema) eachEvent(fn func(typ string, o *object)) {
	for _, t := range s.eventTypes() {
		fn(t, s.event(t))
	}
}

// eachMessage applies an edit to every message role.
func (s *schema) eachMessage(fn func(role string, name string)) {
	u := s.unions["Message"]
	roles := make([]string, 0, len(u.members))
	for r := range u.members {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	for _, r := range roles {
		fn(r, u.members[r])
	}
}

type delta struct {
	version string
	why     string
	edit    func(s *schema)
}

// deltas is the history after 0.0.27, one entry per release with a wire
// change, each edit one line per change.
var deltas = []delta{
	{"0.0.28", "chunk events", func(s *schema) {
		s.addEvent("TEXT_MESSAGE_CHUNK", opt("messageId", tString), opt("role", tEnum("assistant")), opt("delta", tString))
		s.addEvent("TOOL_CALL_CHUNK", opt("toolCallId", tString), opt("toolCallName", tString), opt("parentMessageId", tString), opt("delta", tString))
	}},
	{"0.0.30", "TOOL_CALL_RESULT; THINKING_TEXT_MESSAGE_* parseable (THINKING_START/END only in the enum, so unknown)", func(s *schema) {
		s.addEvent("TOOL_CALL_RESULT", msgID(), callID(), req("content", tString), opt("role", tEnum("tool")))
		s.addEvent("THINKING_TEXT_MESSAGE_START")
		s.addEvent("THINKING_TEXT_MESSAGE_CONTENT", req("delta", tNonEmpty()))
		s.addEvent("THINKING_TEXT_MESSAGE_END")
	}},
	{"0.0.34", "RUN_FINISHED.result", func(s *schema) {
		s.add(eventPrefix+"RUN_FINISHED", anyOpt("result"))
	}},
	{"0.0.36", "ToolMessage.error", func(s *schema) {
		s.add("Message(tool)", opt("error", tString))
	}},
	{"0.0.37", "text roles developer/system/user, role optional; THINKING_START/END parseable", func(s *schema) {
		roles := tEnum("developer", "system", "assistant", "user")
		s.change(eventPrefix+"TEXT_MESSAGE_START", opt("role", roles))
		s.change(eventPrefix+"TEXT_MESSAGE_CHUNK", opt("role", roles))
		s.addEvent("THINKING_START", opt("title", tString))
		s.addEvent("THINKING_END")
	}},
	{"0.0.41", "ACTIVITY_*, activity role, user content parts (text, binary), RUN_STARTED.parentRunId/input (core 0.0.40)", func(s *schema) {
		s.addEvent("ACTIVITY_SNAPSHOT", msgID(), req("activityType", tString), req("content", tRecord), opt("replace", tBool))
		s.addEvent("ACTIVITY_DELTA", msgID(), req("activityType", tString), req("patch", tArray(tAny)))
		s.addMessage("activity", req("activityType", tString), req("content", tRecord))
		s.unions["ContentPart"] = &union{disc: "type", rule: "unknown-part-type", members: map[string]string{}}
		s.addMember("ContentPart", "text", "ContentPart(text)", req("text", tString))
		s.addMember("ContentPart", "binary", "ContentPart(binary)", req("mimeType", tString),
			opt("id", tString), opt("url", tString), opt("data", tString), opt("filename", tString))
		s.obj("ContentPart(binary)").oneOf = []string{"id", "url", "data"}
		s.change("Message(user)", req("content", tContent(tUnion("ContentPart"))))
		s.add(eventPrefix+"RUN_STARTED", opt("parentRunId", tString), field{name: "input", t: tObj("RunAgentInput"), echo: true})
		s.add("RunAgentInput", opt("parentRunId", tString))
	}},
	{"0.0.43", "unknown top-level event keys kept (passthrough)", func(s *schema) {
		s.keepsUnknownTopLevel = true
	}},
	{"0.0.45", "REASONING_*, reasoning role, encryptedValue", func(s *schema) {
		s.addEvent("REASONING_START", msgID())
		s.addEvent("REASONING_MESSAGE_START", msgID(), reasoningRole())
		s.addEvent("REASONING_MESSAGE_CONTENT", msgID(), req("delta", tNonEmpty()))
		s.addEvent("REASONING_MESSAGE_END", msgID())
		s.addEvent("REASONING_MESSAGE_CHUNK", opt("messageId", tString), opt("delta", tString))
		s.addEvent("REASONING_END", msgID())
		s.addEvent("REASONING_ENCRYPTED_VALUE", req("subtype", tEnum("tool-call", "message")), req("entityId", tString), req("encryptedValue", tString))
		for _, r := range []string{"developer", "system", "assistant", "user", "tool"} {
			s.add("Message("+r+")", opt("encryptedValue", tString))
		}
		s.add("ToolCall", opt("encryptedValue", tString))
		s.addMessage("reasoning", req("content", tString), opt("encryptedValue", tString))
	}},
	{"0.0.48", "name on TEXT_MESSAGE_START/CHUNK", func(s *schema) {
		s.add(eventPrefix+"TEXT_MESSAGE_START", opt("name", tString))
		s.add(eventPrefix+"TEXT_MESSAGE_CHUNK", opt("name", tString))
	}},
	{"0.0.49", "media parts image/audio/video/document with data|url sources", func(s *schema) {
		s.unions["Source"] = &union{disc: "type", rule: "unknown-source-type", members: map[string]string{}}
		s.addMember("Source", "data", "Source(data)", req("value", tString), req("mimeType", tString))
		s.addMember("Source", "url", "Source(url)", req("value", tString), opt("mimeType", tString))
		for _, t := range []string{"image", "audio", "video", "document"} {
			s.addMember("ContentPart", t, "ContentPart("+t+")", req("source", tUnion("Source")), anyOpt("metadata"))
		}
	}},
	{"0.0.50", "empty delta allowed", func(s *schema) {
		for _, t := range []string{"TEXT_MESSAGE_CONTENT", "THINKING_TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"} {
			s.change(eventPrefix+t, req("delta", tString))
		}
	}},
	{"0.0.52", "Tool.metadata", func(s *schema) {
		s.add("Tool", opt("metadata", tRecord))
	}},
	{"0.0.54", "RUN_FINISHED.outcome (strict success|interrupt, null read as absent), Interrupt, RunAgentInput.resume", func(s *schema) {
		s.unions["Outcome"] = &union{disc: "type", rule: "unknown-outcome-type", members: map[string]string{}}
		s.addMember("Outcome", "success", "RUN_FINISHED.outcome(success)")
		s.addMember("Outcome", "interrupt", "RUN_FINISHED.outcome(interrupt)", req("interrupts", typ{kind: kArray, elem: &typ{kind: kObject, ref: "Interrupt"}, minItems: 1}))
		s.obj("RUN_FINISHED.outcome(success)").strict = true
		s.obj("RUN_FINISHED.outcome(interrupt)").strict = true
		s.addObject("Interrupt", object{name: "Interrupt", fields: []field{
			req("id", tString), req("reason", tString), opt("message", tString), opt("toolCallId", tString),
			opt("responseSchema", tRecord), opt("expiresAt", tString), opt("metadata", tRecord)}})
		s.add(eventPrefix+"RUN_FINISHED", nullable(opt("outcome", tUnion("Outcome")), nullAbsent))
		s.addObject("ResumeEntry", object{name: "ResumeEntry", fields: []field{
			req("interruptId", tString), req("status", tEnum("resolved", "cancelled")), anyOpt("payload")}})
		s.add("RunAgentInput", opt("resume", tArray(tObj("ResumeEntry"))))
	}},
	{"0.0.58", "usage on RUN_FINISHED/RUN_ERROR; parentMessageId null read as absent", func(s *schema) {
		s.addObject("TokenUsage", object{name: "TokenUsage", fields: []field{
			opt("provider", tString), opt("model", tString),
			opt("inputTokens", tCount()), opt("outputTokens", tCount()), opt("totalTokens", tCount()),
			opt("reasoningTokens", tCount()), opt("cachedInputTokens", tCount())}})
		s.add(eventPrefix+"RUN_FINISHED", opt("usage", tArray(tObj("TokenUsage"))))
		s.add(eventPrefix+"RUN_ERROR", opt("usage", tArray(tObj("TokenUsage"))))
		s.edit(eventPrefix+"TOOL_CALL_START", "parentMessageId", func(f *field) { f.null = nullAbsent })
		s.edit(eventPrefix+"TOOL_CALL_CHUNK", "parentMessageId", func(f *field) { f.null = nullAbsent })
	}},
	{"0.0.59", "SUBAGENT_*, subagentRunId, metadata everywhere (null fatal), state null read as absent", func(s *schema) {
		s.eachEvent(func(t string, o *object) {
			s.add(eventPrefix+t, opt("metadata", tRecord))
			if attributable(t) {
				s.add(eventPrefix+t, opt("subagentRunId", tString))
			}
		})
		s.base = append(s.base, opt("metadata", tRecord))
		s.addEvent("SUBAGENT_STARTED", req("subagentRunId", tString), req("name", tString), opt("description", tString),
			opt("parentSubagentRunId", tString), opt("parentToolCallId", tString), opt("parentMessageId", tString))
		s.unions["SubagentOutcome"] = &union{disc: "type", rule: "unknown-outcome-type", members: map[string]string{}}
		s.addMember("SubagentOutcome", "success", "SUBAGENT_FINISHED.outcome(success)")
		s.addMember("SubagentOutcome", "suspended", "SUBAGENT_FINISHED.outcome(suspended)", opt("interruptIds", tArray(tString)))
		s.obj("SUBAGENT_FINISHED.outcome(success)").strict = true
		s.obj("SUBAGENT_FINISHED.outcome(suspended)").strict = true
		s.addEvent("SUBAGENT_FINISHED", req("subagentRunId", tString), anyOpt("result"), opt("outcome", tUnion("SubagentOutcome")))
		s.addEvent("SUBAGENT_ERROR", req("subagentRunId", tString), req("message", tString), opt("code", tString))
		s.eachMessage(func(_, name string) {
			s.add(name, opt("subagentRunId", tString), opt("metadata", tRecord))
		})
		s.add("Interrupt", opt("subagentRunId", tString))
		s.add("ToolCall", opt("metadata", tRecord))
		s.add("ResumeEntry", opt("metadata", tRecord))
		s.edit("RunAgentInput", "state", func(f *field) { f.null = nullAbsent })
	}},
	{"1.0", "THINKING_* and binary parts retired; strict values; loose objects stripped with warnings", v1},
}

// attributable reports whether an event type carries subagentRunId
// (0.0.59): content and progress events, not the run boundary, not
// MESSAGES_SNAPSHOT, not THINKING_*.
func attributable(t string) bool {
	switch t {
	case "RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT",
		"THINKING_START", "THINKING_END", "THINKING_TEXT_MESSAGE_START",
		"THINKING_TEXT_MESSAGE_CONTENT", "THINKING_TEXT_MESSAGE_END":
		return false
	}
	return true
}

// v1 is 1.0.0, the zod reading (protocol-1.0.md §1, §1.7, §2.11, §2.13).
func v1(s *schema) {
	s.unknownEventFatal = false  // dropped with a warning
	s.unknownMemberFatal = false // stripped with a warning
	ts := opt("timestamp", typ{kind: kInt, safe: true})
	raw := field{name: "rawEvent", t: tAny, null: nullRetired, retired: "rawEvent:null"}
	s.base = []field{ts, raw, s.base[2]}
	s.eachEvent(func(t string, o *object) { s.change(eventPrefix+t, ts, raw) })
	for _, t := range []string{"THINKING_START", "THINKING_END", "THINKING_TEXT_MESSAGE_START", "THINKING_TEXT_MESSAGE_CONTENT", "THINKING_TEXT_MESSAGE_END"} {
		s.removeEvent(t, t)
	}
	// Opaque values that must now be present. 0.0.x read them as z.any(),
	// which takes an absent member, and the Python SDK's encoder (every
	// release to 0.1.20: model_dump_json(exclude_none=True)) drops them when
	// they hold None: their absence is a retired shape, upgraded to null
	// (the value the producer had), not a malformed event.
	for _, f := range [...][2]string{{"STATE_SNAPSHOT", "snapshot"}, {"RAW", "event"}, {"CUSTOM", "value"}} {
		req := anyReq(f[1])
		req.absent = f[0] + "." + f[1] + ":absent"
		s.change(eventPrefix+f[0], req)
	}

	// JSON Patch ops are validated; their members are open.
	s.unions["PatchOp"] = &union{disc: "op", rule: "unknown-op", members: map[string]string{}}
	ptr := typ{kind: kString, pointer: true}
	for _, op := range []string{"add", "replace", "test"} {
		s.addMember("PatchOp", op, "JsonPatch("+op+")", req("path", ptr), anyReq("value"))
	}
	s.addMember("PatchOp", "remove", "JsonPatch(remove)", req("path", ptr))
	for _, op := range []string{"move", "copy"} {
		s.addMember("PatchOp", op, "JsonPatch("+op+")", req("path", ptr), req("from", ptr))
	}
	for _, op := range []string{"add", "replace", "test", "remove", "move", "copy"} {
		s.obj("JsonPatch(" + op + ")").open = true
	}
	s.change(eventPrefix+"STATE_DELTA", req("delta", tArray(tUnion("PatchOp"))))
	s.change(eventPrefix+"ACTIVITY_DELTA", req("patch", tArray(tUnion("PatchOp"))))

	// Content parts: ids, non-null metadata, file sources, binary retired,
	// parts in tool results and tool messages.
	s.add("ContentPart(text)", opt("id", tString), opt("metadata", tAny))
	for _, t := range []string{"image", "audio", "video", "document"} {
		s.add("ContentPart("+t+")", opt("id", tString))
		s.change("ContentPart("+t+")", field{name: "metadata", t: tAny, null: nullRetired, retired: "media-part metadata:null"})
	}
	cp := s.unions["ContentPart"]
	delete(cp.members, "binary")
	delete(s.objects, "ContentPart(binary)")
	// An id-only binary part cannot be converted: it is unknown material.
	cp.retired = map[string]retiredMember{"binary": {shape: "binary content part", req: []string{"mimeType"}, oneOf: []string{"data", "url"}}}
	s.addMember("Source", "file", "Source(file)", req("value", tString), opt("provider", tString), opt("mimeType", tString))
	s.change(eventPrefix+"TOOL_CALL_RESULT", req("content", tContent(tUnion("ContentPart"))))
	s.change("Message(tool)", req("content", tContent(tUnion("ContentPart"))))

	// Outcomes: cancelled, pendingToolCallIds, loose objects; retired nulls.
	s.addMember("Outcome", "cancelled", "RUN_FINISHED.outcome(cancelled)")
	s.add("RUN_FINISHED.outcome(success)", opt("pendingToolCallIds", tArray(tString)))
	for _, n := range []string{"RUN_FINISHED.outcome(success)", "RUN_FINISHED.outcome(interrupt)",
		"SUBAGENT_FINISHED.outcome(success)", "SUBAGENT_FINISHED.outcome(suspended)"} {
		s.obj(n).strict = false
	}
	s.change(eventPrefix+"RUN_FINISHED",
		field{name: "outcome", t: tUnion("Outcome"), null: nullRetired, retired: "RUN_FINISHED.outcome:null"},
		field{name: "result", t: tAny, null: nullRetired, retired: "RUN_FINISHED.result:null"})
	s.change(eventPrefix+"SUBAGENT_FINISHED",
		field{name: "result", t: tAny, null: nullRetired, retired: "SUBAGENT_FINISHED.result:null"})
	for _, t := range []string{"TOOL_CALL_START", "TOOL_CALL_CHUNK"} {
		s.change(eventPrefix+t, field{name: "parentMessageId", t: tString, null: nullRetired, retired: t + ".parentMessageId:null"})
	}

	// Usage counts are safe integers; one more count.
	tu := s.obj("TokenUsage")
	for i := range tu.fields {
		if tu.fields[i].t.kind == kInt {
			tu.fields[i].t.safe = true
		}
	}
	s.add("TokenUsage", opt("cacheWriteInputTokens", typ{kind: kInt, nonNeg: true, safe: true}))

	// Version negotiation.
	s.add(eventPrefix+"RUN_STARTED", opt("protocolVersion", tString))
	s.add("RunAgentInput", opt("protocolVersion", tString))

	// RunAgentInput: tools and context optional; non-null opaque values,
	// whose nulls the reader converts only inside RUN_STARTED.input.
	s.change("RunAgentInput", opt("tools", tArray(tObj("Tool"))), opt("context", tArray(tObj("Context"))),
		field{name: "forwardedProps", t: tAny, null: nullRetiredInEcho, retired: "RUN_STARTED.input.forwardedProps:null"})
	s.change("Tool", field{name: "parameters", t: tAny, null: nullRetiredInEcho, retired: "RUN_STARTED.input.tools[].parameters:null"})
	s.change("ResumeEntry", field{name: "payload", t: tAny, null: nullRetiredInEcho, retired: "RUN_STARTED.input.resume[].payload:null"})
}
