package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/pprofhandler"
	"go.opentelemetry.io/otel"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/agui-relay/agui-relay/internal/demo"
	"github.com/agui-relay/agui-relay/internal/redact"
	"github.com/agui-relay/agui-relay/metrics"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/record"
	"github.com/agui-relay/agui-relay/relay"
	"github.com/agui-relay/agui-relay/tracing"
)

// serveConfig is what the serve flags set.
type serveConfig struct {
	listen, adminListen, upstream    string
	producerVersion, consumerVersion negotiate.Version
	producerPython                   negotiate.PyRelease // --producer-version named a Python release
	quietWarnings                    bool
	logFormat, logLevel              string
	maxBody, maxFrame                byteSize
	maxBodiesInFlight                byteSize // the server's, not a route's: bodies are read before a route is matched
	shutdownGrace                    time.Duration
	connectTimeout, firstByteTimeout time.Duration
	idleTimeout, runTimeout          time.Duration
	consumerStallTimeout             time.Duration
	bodyTimeout                      time.Duration
	keepAlive                        time.Duration
	maxConns                         int
	upstreamReuse                    string // --upstream-reuse: always or never
	noReuse                          bool   // upstreamReuse is never
	demoVersion                      negotiate.Version
	demoPace                         time.Duration
	// config is the routes file (--config); routes are its routes, read
	// by parseServe and again on SIGHUP.
	config string
	routes []routeConfig
	// recordDir, when set, records every run there (--record-dir).
	recordDir      string
	recordRedact   bool
	recordMaxBytes byteSize
	pprof          bool
	cors           relay.CORSOptions // the --cors-* flags
	// otlpEndpoint, when set, exports the spans of the runs to that OTLP
	// collector (--otlp-endpoint); the OTEL_* environment may also turn
	// tracing on (tracing.Enabled).
	otlpEndpoint string
}

// parseServe reads the serve flags from args and, for flags not given
// there, from AGUI_RELAY_<FLAG> through getenv.
func parseServe(args []string, getenv func(string) string, stderr io.Writer) (*serveConfig, error) {
	c := &serveConfig{}
	fs := serveFlags(c, stderr)
	if err := parseWithEnv(fs, args, getenv); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var err error
	if c.noReuse, err = upstreamReuse(c.upstreamReuse); err != nil {
		return nil, fmt.Errorf("--upstream-reuse %v", err)
	}
	if c.upstream != "" {
		if err := checkUpstream(c.upstream); err != nil {
			return nil, fmt.Errorf("--upstream %v", err)
		}
	}
	if err := checkCORS(c.cors); err != nil {
		return nil, fmt.Errorf("--cors-allow-origins: %v", err)
	}
	if c.config != "" {
		routes, err := loadRoutes(c.config, c)
		if err != nil {
			return nil, fmt.Errorf("--config %v", err)
		}
		c.routes = routes
	}
	if largest := largestMaxBody(c); c.maxBodiesInFlight > 0 && int(c.maxBodiesInFlight) < largest {
		return nil, fmt.Errorf("--max-bodies-in-flight %v is below the largest body limit, %v: such a body could never be read", &c.maxBodiesInFlight, (*byteSize)(&largest))
	}
	if c.logFormat != "json" && c.logFormat != "console" {
		return nil, fmt.Errorf("--log-format %q: want json or console", c.logFormat)
	}
	if _, err := zapcore.ParseLevel(c.logLevel); err != nil {
		return nil, fmt.Errorf("--log-level: %v", err)
	}
	if _, err := tracing.Enabled(tracing.Options{Endpoint: c.otlpEndpoint}, getenv); err != nil {
		if c.otlpEndpoint != "" {
			return nil, fmt.Errorf("--otlp-endpoint %v", err)
		}
		return nil, fmt.Errorf("tracing: %v", err)
	}
	return c, nil
}

// serveFlags defines the serve flags on a flag set writing to out, with
// their defaults set in c.
func serveFlags(c *serveConfig, out io.Writer) *flag.FlagSet {
	c.maxBody, c.maxBodiesInFlight, c.maxFrame, c.recordMaxBytes = 64<<20, 256<<20, 10<<20, 16<<20
	fs := newFlagSet("serve", out)
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8080", "address for relayed traffic")
	fs.StringVar(&c.config, "config", "", "routes file (YAML or JSON): path prefixes to upstreams, each with its versions, timeouts and limits; the\nflags below are the defaults of what a route leaves out. Re-read on SIGHUP. Empty: one route, every path to --upstream")
	fs.StringVar(&c.adminListen, "admin-listen", "127.0.0.1:9090", "address for /healthz, /readyz, /metrics (Prometheus) and /deprecations (JSON)")
	fs.StringVar(&c.upstream, "upstream", "", "base URL of the producer (the agent); the request's path and query are appended.\nEmpty: an embedded demo agent is started in-process, which answers POST /agent and GET /agent/capabilities (see --demo-version)")
	fs.Func("producer-version", "what the producer speaks when it does not declare it (1.0, or a legacy SDK release such as 0.0.45,\nor the Python SDK release it is built on: ag-ui-protocol@0.1.19, py0.1.19 for short).\nEmpty: learnt per run from RUN_STARTED.protocolVersion; absent there means the producer predates the field", producerVersionFlag(&c.producerVersion, &c.producerPython))
	fs.Func("consumer-version", "what consumers that do not declare RunAgentInput.protocolVersion speak (a consumer that declares is taken at its word).\n"+
		"auto (the default): one that does not declare predates the field and is read as "+negotiate.NewestBeforeField().String()+", the newest release before it\n"+
		"(what CopilotKit 1.75 bundles); 1.0 reads undeclared consumers as current; a legacy release (0.0.48) names them exactly (default auto)", consumerVersionFlag(&c.consumerVersion))
	fs.BoolVar(&c.quietWarnings, "quiet-translation-warnings", false, "do not log lossy translations (they are still counted)")
	fs.StringVar(&c.logFormat, "log-format", "json", "log format: json or console")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.Var(&c.maxBody, "max-body", "largest RunAgentInput accepted (bytes, or with a KiB/MiB/GiB suffix); larger gets 413")
	fs.Var(&c.maxBodiesInFlight, "max-bodies-in-flight", "most bytes of request bodies held at once, every route and connection together. A body holds what it received,\n"+
		"not what its header announces; one that would take them over is refused with 503 and Retry-After (before it is read\n"+
		"when its Content-Length is over what is free). At least the largest --max-body (0: four times it)")
	fs.Var(&c.maxFrame, "max-frame", "largest single event accepted from the producer; a larger one ends the run with a RUN_ERROR")
	fs.DurationVar(&c.shutdownGrace, "shutdown-grace", 30*time.Second, "on SIGTERM or SIGINT, how long runs in flight may continue before they are ended with a RUN_ERROR")
	fs.DurationVar(&c.connectTimeout, "connect-timeout", 10*time.Second, "how long opening a connection to the producer may take (0: no limit)")
	fs.DurationVar(&c.firstByteTimeout, "first-byte-timeout", 5*time.Minute, "how long the producer may take to start responding to a request once it is sent, and to take the request;\n"+
		"LLM agents may think first (0: no limit). A response that comes while a request is still being sent (a 413 or 401\n"+
		"on the header of a large body) is relayed at once, the rest of the body not sent")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 5*time.Minute, "how long the producer may send nothing in the middle of a stream (not even a comment) before the run is ended with a RUN_ERROR (0: no limit)")
	fs.DurationVar(&c.consumerStallTimeout, "consumer-stall-timeout", relay.DefaultConsumerStallTimeout, "how long a consumer may take no byte of a stream while the relay has bytes for it (its socket full) before the run\n"+
		"is cut: the producer's request cancelled, the connection closed, the run counted consumer_stalled. Each byte taken\n"+
		"starts the limit again, so a consumer reading a large event slowly but steadily is not cut. The producer waits\n"+
		"behind such a consumer, and the wait is not counted as its silence (--idle-timeout). A consumer that reads takes\n"+
		"bytes within milliseconds; one that took nothing for a minute is frozen, asleep or gone without a reset (0: no limit)")
	fs.DurationVar(&c.bodyTimeout, "body-timeout", relay.DefaultBodyTimeout, "how long a request body may send nothing before it is cut: 408, the connection closed, and what it held of\n"+
		"--max-bodies-in-flight given back (nginx's client_body_timeout, 60s by default there too). Counted between two\n"+
		"bytes, not for the whole body; the whole request still has the server's 2-minute read timeout (0: only that limit)")
	fs.DurationVar(&c.keepAlive, "keepalive", 15*time.Second, "while the producer is silent mid-stream, how long the consumer may be sent nothing before the relay writes it an SSE\n"+
		"comment (\": keep-alive\"), and again each interval while the silence lasts, between frames (0: none). Proxies cut silent\n"+
		"connections (nginx's proxy_read_timeout and AWS ALB's idle timeout: 60s by default); 15s stays well under them, and under\n"+
		"30s ones, at 14 bytes a silent stream, and a consumer that left is noticed within it. Before the producer's header\n"+
		"nothing is sent: see --first-byte-timeout")
	fs.DurationVar(&c.runTimeout, "run-timeout", time.Hour, "longest run, from the request to the end of the stream, before it is ended with a RUN_ERROR (0: no limit)")
	fs.IntVar(&c.maxConns, "upstream-max-conns", 4096, "most connections to the producer, that is runs in flight; more get 503")
	fs.StringVar(&c.upstreamReuse, "upstream-reuse", "always", "whether a connection to the producer carries later requests: always (pooled, checked for bytes the producer sent\n"+
		"outside a response before each reuse) or never (a new connection for each request, asked to close after its\n"+
		"response: bytes a producer sends too late for that check reach no other request; a TCP connection per request)")
	fs.Func("demo-version", "protocol version the embedded demo agent speaks unless a run asks (?version=, forwardedProps.demo.version); default: the newest recorded (1.0)", versionFlag(&c.demoVersion))
	fs.StringVar(&c.recordDir, "record-dir", "", "record every run under `dir`, one directory per run: input.received.json, input.forwarded.json,\nproducer.sse (as received), emitted.sse (as written), meta.json; agui-relay translate and check replay them.\nEmpty: no recording")
	fs.BoolVar(&c.recordRedact, "record-redact", false, "replace message content in recordings (every string but ids, types, roles, names and versions) with same-length placeholders")
	fs.Var(&c.recordMaxBytes, "record-max-bytes", "largest recording of one run, its files together; what is over is cut and meta.json says so")
	fs.BoolVar(&c.pprof, "pprof", false, "also serve Go's profiles (net/http/pprof) under /debug/pprof/ on --admin-listen; they reveal memory contents, so keep that address private")
	fs.StringVar(&c.otlpEndpoint, "otlp-endpoint", "", "export OpenTelemetry spans of the runs to this OTLP collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT does\n"+
		"(http://host:4318, spans going to its /v1/traces; with OTEL_EXPORTER_OTLP_PROTOCOL=grpc, over gRPC: http://host:4317).\n"+
		"Empty: tracing is on only when the OTEL_* environment configures it (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_EXPORTER=otlp)")
	corsFlags(fs, &c.cors)
	fs.DurationVar(&c.demoPace, "demo-pace", 50*time.Millisecond, "pause between the demo agent's events, so that streaming shows")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: agui-relay [serve] [flags]\n\nRuns the relay. Every flag can also be set by the environment variable\nAGUI_RELAY_<FLAG> (upper case, - becomes _); the command line wins.\n\nflags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// versionFlag reads a version that names a release the relay knows; also
// lists what else the flag takes, for the error.
func versionFlag(dst *negotiate.Version, also ...string) func(string) error {
	return func(s string) error {
		if s == "" {
			*dst = negotiate.Version{}
			return nil
		}
		v, err := negotiate.ParseKnown(s, also...)
		if err == nil {
			*dst = v
		}
		return err
	}
}

// producerVersionFlag is versionFlag for --producer-version, which may also
// name the Python SDK release the producer is built on (py is then set, and
// the version is the release's PyProfile.Events).
func producerVersionFlag(dst *negotiate.Version, py *negotiate.PyRelease) func(string) error {
	set := versionFlag(dst, negotiate.KnownPyReleases())
	return func(s string) error {
		v, r, named, err := parseProducer(s)
		if !named {
			*py = negotiate.PyRelease{}
			return set(s)
		}
		if err == nil {
			*dst, *py = v, r
		}
		return err
	}
}

// consumerVersionFlag is versionFlag taking "auto" (the zero Version: see
// negotiate.ConsumerVersion) and refusing, at start, a consumer release the
// relay cannot serve (every run would otherwise be refused with 400).
func consumerVersionFlag(dst *negotiate.Version) func(string) error {
	set := versionFlag(dst, auto)
	return func(s string) error {
		if s == auto {
			*dst = negotiate.Version{}
			return nil
		}
		if err := set(s); err != nil {
			return err
		}
		if ok, why := negotiate.Supported(*dst); !dst.IsZero() && !ok {
			return fmt.Errorf("%s is not served: %s", dst, why)
		}
		return nil
	}
}

// auto is the consumer version that reads an undeclared consumer as
// predating the field (--consumer-version, a route's consumerVersion).
const auto = "auto"

// byteSize is a flag holding a size in bytes, written plain or with a
// KiB, MiB or GiB suffix.
type byteSize int

func (b *byteSize) String() string {
	for _, u := range []struct {
		suffix string
		n      int
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if int(*b) >= u.n && int(*b)%u.n == 0 {
			return strconv.Itoa(int(*b)/u.n) + u.suffix
		}
	}
	return strconv.Itoa(int(*b))
}

func (b *byteSize) Set(s string) error {
	mult := 1
	for _, u := range []struct {
		suffix string
		n      int
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.n
			break
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return errors.New("want a positive size such as 65536, 64KiB or 10MiB")
	}
	*b = byteSize(n * mult)
	return nil
}

func newLogger(c *serveConfig, w io.Writer) *zap.Logger {
	level, _ := zapcore.ParseLevel(c.logLevel)
	var enc zapcore.Encoder
	if c.logFormat == "console" {
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		enc = zapcore.NewConsoleEncoder(ec)
	} else {
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder
		enc = zapcore.NewJSONEncoder(ec)
	}
	// No sampling: every run's line counts.
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), level))
}

func runServe(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, err := parseServe(args, os.Getenv, &cmdOutput{stdout, stderr})
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "agui-relay serve: %v\nRun 'agui-relay serve --help' for usage.\n", err)
		return 2
	}
	log := newLogger(c, stderr)
	defer log.Sync() //nolint:errcheck
	warnUnknownEnv(log, os.Environ(), serveFlags(&serveConfig{}, io.Discard))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, c, log, demo.Recordings(), nil); err != nil {
		log.Error("agui-relay stopped", zap.Error(err))
		return 1
	}
	return 0
}

// listening reports the addresses serve listens on, once it does.
type listening struct {
	relay, admin, demo string
}

// serve runs the relay until ctx ends, then shuts down: readiness false, no
// new connections, runs in flight get the grace period and are then ended
// with a RUN_ERROR. started, when set, is called once the listeners are up.
func serve(ctx context.Context, c *serveConfig, log *zap.Logger, recordings fs.FS, started func(listening)) error {
	var at listening
	upstream := c.upstream
	var demoSrv *fasthttp.Server
	var demoLn net.Listener // closed on a return before the demo serves on it
	if upstream == "" && c.config == "" {
		var err error
		if demoLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return fmt.Errorf("starting the demo agent: %w", err)
		}
		defer func() {
			if demoLn != nil {
				demoLn.Close()
			}
		}()
		agent := &demo.Agent{Recordings: recordings, Version: c.demoVersion, Pace: c.demoPace}
		demoSrv = &fasthttp.Server{Handler: agent.Handle, NoDefaultServerHeader: true, ReadTimeout: time.Minute}
		upstream = "http://" + demoLn.Addr().String()
		at.demo = upstream
	}

	mets := metrics.New(metrics.Options{})
	tap := mets.Tap
	var recorder *record.Recorder
	if c.recordDir != "" {
		if err := os.MkdirAll(c.recordDir, 0o700); err != nil {
			return fmt.Errorf("--record-dir: %w", err)
		}
		recorder = &record.Recorder{Dir: c.recordDir, Redact: c.recordRedact, MaxBytes: int(c.recordMaxBytes), Log: log}
		defer recorder.Close() // after the shutdown below: the last runs are written
	}
	tracer, err := tracing.New(ctx, tracing.Options{Endpoint: c.otlpEndpoint, ServiceVersion: moduleVersion()})
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	if tracer != nil {
		// The exporter's failures (a collector down) are logged, not the
		// runs': a span that cannot be sent is dropped.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("exporting traces", zap.Error(err)) }))
		defer func() { // after the shutdown below: the last runs' spans are sent
			flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tracer.Shutdown(flush); err != nil {
				log.Warn("exporting the last traces", zap.Error(err))
			}
		}()
	}
	switch {
	case recorder != nil && tracer != nil:
		tap = func(rep *relay.RunReport) relay.RunTap {
			return relay.JoinTaps(mets.Tap(rep), recorder.Tap(rep), tracer.Tap(rep))
		}
	case recorder != nil:
		tap = func(rep *relay.RunReport) relay.RunTap { return relay.JoinTaps(mets.Tap(rep), recorder.Tap(rep)) }
	case tracer != nil:
		tap = func(rep *relay.RunReport) relay.RunTap { return relay.JoinTaps(mets.Tap(rep), tracer.Tap(rep)) }
	}
	// One poller for every route's relay, closed once their runs ended.
	poller := relay.NewPoller()
	defer poller.Close()
	poller.ReleaseMemory()
	shared := relayShared{log: log, quiet: c.quietWarnings, tap: tap, onUnsolicited: mets.OnUnsolicited, named: c.config != "", poller: poller}
	if tracer != nil {
		shared.requestTap = tracer.RequestTap
	}
	routes := c.routes
	if c.config == "" {
		routes = []routeConfig{defaultRoute(c, upstream)}
	}
	table, err := routeTable(routes, shared)
	if err != nil {
		return err
	}
	r := relay.NewRouter(table, int(c.maxBody), log)
	r.MaxBodiesInFlight = int(c.maxBodiesInFlight)
	srv := r.Server()
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", c.listen, err)
	}
	at.relay = ln.Addr().String()
	ln = relay.Listener(ln) // consumers' connections read and written with raw system calls
	// A failed accept (ulimit -n reached) is retried, never the end of Serve.
	ln = relay.RetryAccept(ln, log, mets.AcceptError)

	var ready atomic.Bool
	admin := &fasthttp.Server{Handler: adminHandler(&ready, mets.Handler(), mets.DeprecationsHandler(), c.pprof), NoDefaultServerHeader: true, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	aln, err := net.Listen("tcp", c.adminListen)
	if err != nil {
		ln.Close()
		return fmt.Errorf("--admin-listen %s: %w", c.adminListen, err)
	}
	at.admin = aln.Addr().String()
	aln = relay.RetryAccept(aln, log, nil)

	if demoSrv != nil {
		go demoSrv.Serve(relay.RetryAccept(demoLn, log, nil)) //nolint:errcheck // ends at shutdown
		demoLn = nil
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	go func() { errc <- admin.Serve(aln) }()
	ready.Store(true)
	fields := []zap.Field{zap.String("listen", at.relay), zap.String("admin", at.admin)}
	if c.config != "" {
		fields = append(fields, zap.String("config", c.config), zap.Strings("routes", routeNames(routes)))
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP) // before started: a SIGHUP from now on reloads
		defer signal.Stop(hup)
		go reloadOnSIGHUP(ctx, hup, c, shared, r, log)
	} else {
		fields = append(fields, zap.String("upstream", redact.URL(upstream)))
	}
	if at.demo != "" {
		fields = append(fields, zap.Bool("demo", true), zap.String("demo_version", versionOr(c.demoVersion, "newest recorded")))
	}
	if tracer != nil {
		d := tracer.Destination()
		fields = append(fields, zap.String("traces", "otlp"), zap.String("traces_endpoint", redact.URL(d.Endpoint)),
			zap.String("traces_protocol", d.Protocol), zap.String("traces_sampler", tracer.Sampler()))
	} else {
		fields = append(fields, zap.String("traces", "off"))
	}
	log.Info("agui-relay listening", fields...)
	if started != nil {
		started(at)
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}

	// Shutdown: not ready, no new connections, runs in flight get the grace.
	ready.Store(false)
	log.Info("shutting down", zap.Duration("grace", c.shutdownGrace), zap.Int("runs", r.Active()))
	grace, cancel := context.WithTimeout(context.Background(), c.shutdownGrace)
	defer cancel()
	// Event streams run on connections the relay took over from the
	// server, which Shutdown does not wait for: AwaitRuns does.
	if err := srv.ShutdownWithContext(grace); err != nil || relay.AwaitRuns(grace, r.Active) != nil {
		log.Warn("grace period over: ending the runs still open with RUN_ERROR", zap.Int("runs", r.Active()))
		r.EndRuns()
		for deadline := time.Now().Add(5 * time.Second); r.Active() > 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The admin server has nothing long-lived; the demo agent may be in a
	// paced pause of a run the relay has ended already.
	rest, cancelRest := context.WithTimeout(context.Background(), time.Second)
	defer cancelRest()
	admin.ShutdownWithContext(rest) //nolint:errcheck
	if demoSrv != nil {
		demoSrv.ShutdownWithContext(rest) //nolint:errcheck
	}
	return serveErr
}

// moduleVersion is the relay's version as the build names it ("v1.2.3"),
// "" for a build from a work tree.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return ""
}

// negativeIfZero maps the flags' "0 means no limit" onto ClientOptions'
// "negative disables".
func negativeIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func versionOr(v negotiate.Version, none string) string {
	if v.IsZero() {
		return none
	}
	return v.String()
}

// adminHandler serves /healthz (the process is alive), /readyz (it relays:
// false while shutting down), /metrics (Prometheus) and /deprecations (the
// deprecation registry with the runs that still need each translation, as
// JSON) when they are set, and with profiles Go's profiles under
// /debug/pprof/ (off by default: a heap profile shows memory contents).
func adminHandler(ready *atomic.Bool, metrics, deprecations fasthttp.RequestHandler, profiles bool) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if profiles && bytes.HasPrefix(ctx.Path(), []byte("/debug/pprof/")) {
			pprofhandler.PprofHandler(ctx)
			return
		}
		ctx.SetContentType("text/plain; charset=utf-8")
		switch string(ctx.Path()) {
		case "/healthz":
			ctx.SetBodyString("ok\n")
		case "/readyz":
			if ready.Load() {
				ctx.SetBodyString("ready\n")
				return
			}
			ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
			ctx.SetBodyString("shutting down\n")
		case "/metrics":
			if metrics == nil {
				ctx.SetStatusCode(fasthttp.StatusNotFound)
				return
			}
			metrics(ctx)
		case "/deprecations":
			if deprecations == nil {
				ctx.SetStatusCode(fasthttp.StatusNotFound)
				return
			}
			deprecations(ctx)
		default:
			ctx.SetStatusCode(fasthttp.StatusNotFound)
			ctx.SetBodyString("admin: /healthz, /readyz, /metrics, /deprecations\n")
		}
	}
}

// reloadOnSIGHUP re-reads the routes file on every signal on hup until ctx
// ends and puts the new table in force for the requests that arrive from
// then on; runs in flight finish on the table they started with. A file
// that does not load keeps the table in force.
func reloadOnSIGHUP(ctx context.Context, hup <-chan os.Signal, c *serveConfig, shared relayShared, r *relay.Router, log *zap.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			reloadRoutes(c, shared, r, log)
		}
	}
}

// reloadRoutes reads c.config again and swaps the router's table for it.
func reloadRoutes(c *serveConfig, shared relayShared, r *relay.Router, log *zap.Logger) {
	routes, err := loadRoutes(c.config, c)
	var table *relay.Table
	if err == nil {
		table, err = routeTable(routes, shared)
	}
	if err == nil {
		err = r.Swap(table)
	}
	if err != nil {
		log.Error("reloading the routes failed; the routes in force stay", zap.String("config", c.config), zap.Error(err))
		return
	}
	log.Info("routes reloaded", zap.String("config", c.config), zap.Strings("routes", routeNames(routes)),
		zap.Int("runs_in_flight", r.Active()))
}

func routeNames(routes []routeConfig) []string {
	names := make([]string, len(routes))
	for i, rc := range routes {
		names[i] = rc.name + " " + rc.prefix + " -> " + rc.upstream
	}
	return names
}

// largestMaxBody is the largest body limit of c: --max-body's, or a
// route's above it.
func largestMaxBody(c *serveConfig) int {
	n := int(c.maxBody)
	for _, r := range c.routes {
		n = max(n, r.maxBody)
	}
	return n
}
