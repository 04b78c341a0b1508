package diagram

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-mcp/junction"
)

// Name is the pack's source name.
const Name = "diagram"

// Defaults for [Options]. Together they keep one run under 64 MiB of
// memory: a run holds at most MaxRunBytes of node outputs (those of its
// sub-diagrams in progress and the items its batches have collected
// included), and its result is encoded several times on its way to the
// store and to the host (the answer to the host costs about twenty times
// its size before the collector frees it), plus, for each of at most
// four batch items in progress, one template's text or one HTTP body
// (MaxOutputBytes). The hub's memory for runs is then bounded by
// MaxConcurrentRuns times that: about 512 MiB with the defaults.
const (
	DefaultMaxConcurrentRuns = 8
	DefaultTimeout           = 300 * time.Second
	DefaultMaxTimeout        = time.Hour
	DefaultMaxNodes          = 200
	DefaultMaxFanOut         = 32
	DefaultMaxOutputBytes    = 1 << 20
	DefaultMaxRunBytes       = 2 << 20
	DefaultMaxSteps          = 1000
	DefaultMaxStoredRuns     = 1000
	DefaultMaxRunAge         = 30 * 24 * time.Hour
	DefaultMaxStoreBytes     = 256 << 20
)

// A Hub is what the pack needs from the hub it serves in: calling tools by
// their exposed names, and knowing which exist. *junction.Hub is one.
type Hub interface {
	Caller
	Tools() []junction.ToolInfo
}

// Options configure [New]. Zero values mean the defaults above.
type Options struct {
	// Hub runs the tool nodes. Required.
	Hub Hub
	// DataDir holds saved diagrams (DataDir/diagrams) and, unless Store is
	// set, the run database (DataDir/diagram-runs.db). Required.
	DataDir string
	// Store keeps runs; nil means a [BoltStore] in DataDir. The pack closes
	// it on Close. A Store that is also a [CancelRelay] lets cancel_run
	// reach runs that another process runs.
	Store Store
	// Owners tell which processes running diagrams are alive; nil means a
	// file lock per process in DataDir/diagram-owners. The caller keeps
	// and closes it.
	Owners Owners
	// InterruptedSweep is how often, on a store shared by several
	// processes (a CancelRelay), the pack fails the runs whose owner is
	// gone, so that a run nobody reads does not stay running; zero means
	// 10s. Other runs are checked when read.
	InterruptedSweep time.Duration
	// AllowCommands enables command nodes, which run programs on this
	// machine. Off by default.
	AllowCommands bool
	// MaxConcurrentRuns bounds runs in progress (synchronous and
	// background); a run over the limit is refused, not queued.
	MaxConcurrentRuns int
	// DefaultTimeout bounds a run that asks for no timeout; MaxTimeout is
	// the largest timeout a caller may ask for.
	DefaultTimeout, MaxTimeout time.Duration
	// MaxNodes bounds the nodes of a diagram and MaxFanOut the edges
	// that leave one node; a diagram over either does not validate.
	MaxNodes, MaxFanOut int
	// MaxOutputBytes bounds each node's output (as JSON), HTTP bodies,
	// command output and a template's text; a sub_diagram batch stops at
	// the first item that brings its output over it.
	MaxOutputBytes int
	// MaxRunBytes bounds the total of a run's node outputs (as JSON, the
	// latest output of each node, the start node's being the input),
	// counting with them the outputs of its sub-diagrams in progress and
	// the items its batches have collected so far.
	MaxRunBytes int
	// MaxSteps bounds node runs per diagram run (loops).
	MaxSteps int
	// MaxStoredRuns, MaxRunAge and MaxStoreBytes say which finished runs
	// the store keeps (see [Retention]); the oldest go first.
	MaxStoredRuns int
	MaxRunAge     time.Duration
	MaxStoreBytes int64
	// HTTPAllowHosts and HTTPAllowCIDRs open, to http nodes, addresses
	// they refuse by default (loopback, private, link-local, CGNAT,
	// multicast, unspecified, reserved). A host entry is a name, an IP
	// address or *.domain, optionally with :port; a connection to a host
	// it names is not checked. A CIDR allows the addresses in it,
	// whatever name led there.
	HTTPAllowHosts []string
	HTTPAllowCIDRs []netip.Prefix
	// HTTPClient, if set, makes the http nodes' requests instead of the
	// pack's own client, and its dialer alone decides what they reach:
	// the address rules above are not applied.
	HTTPClient *http.Client
	// Logger receives the pack's logs; nil discards them.
	Logger *slog.Logger
	// FilesRoot is the folder DiPeO light diagrams' db nodes, endpoints
	// (save_to_file) and template_job nodes read and write, and nothing
	// outside it; empty means DataDir/diagram-files.
	FilesRoot string
	// DiPeO serves DiPeO's own tools and resources beside the pack's (see
	// dipeo.go), looking for diagrams under DiagramsRoot.
	DiPeO bool
	// DiagramsRoot is, in DiPeO mode, the folder that holds DiPeO's
	// projects/mcp-diagrams and examples/simple_diagrams (DiPeO's
	// working directory); fetch reads nothing outside it. Empty means the
	// process's working directory.
	DiagramsRoot string
}

// Pack is the diagram pack: a [junction.Pack] with the diagram tools and
// resources, plus the runs it owns. Close it to stop background runs.
type Pack struct {
	*junction.Pack

	opts   Options
	logger *slog.Logger
	lib    library
	owners Owners
	// fileOwner is the file lock taken when Options.Owners is nil, so
	// Close can release it.
	fileOwner *ownerLock
	eng       engine
	slots     chan struct{}
	// ownClient is the http nodes' client when the pack made it, so
	// Close can drop its idle connections.
	ownClient *http.Client
	// rounds are the runs waiting for their host's answer (2026-07-28).
	rounds rounds
	// pruning is set while a background prune runs, so runs that end
	// together start one.
	pruning atomic.Bool

	// The run store is opened, and the runs of dead processes marked
	// failed, in the background: bbolt's commit syncs the file, which
	// took several milliseconds of every start. store and storeErr are
	// set before storeReady is closed; use them after [Pack.waitStore].
	storeReady chan struct{}
	store      Store
	storeErr   error

	base     context.Context // parent of every run's context; cancelled by Close
	stopRuns context.CancelCauseFunc
	wg       sync.WaitGroup // every run in progress, sync or background

	mu     sync.Mutex         // guards the fields below
	active map[string]*active // runs in progress in this process
	closed bool

	closeOnce sync.Once
	closeErr  error
}

// active is a run in progress in this process.
type active struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the run's record is final
}

var (
	errCancelled = errors.New("cancelled by cancel_run")
	errShutdown  = errors.New("interrupted: the hub shut down before the run finished")
)

// New returns the pack. It opens the run store and marks runs left
// "running" by a process that is gone as failed in the background; the
// tools that need the store wait for that, and report its error if the
// store cannot be opened.
func New(opts Options) (*Pack, error) {
	if opts.Hub == nil {
		return nil, errors.New("diagram pack: Options.Hub is required")
	}
	if opts.DataDir == "" {
		return nil, errors.New("diagram pack: Options.DataDir is required")
	}
	if opts.MaxConcurrentRuns <= 0 {
		opts.MaxConcurrentRuns = DefaultMaxConcurrentRuns
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = DefaultMaxTimeout
	}
	for _, d := range []struct {
		field *int
		def   int
	}{
		{&opts.MaxNodes, DefaultMaxNodes},
		{&opts.MaxFanOut, DefaultMaxFanOut},
		{&opts.MaxOutputBytes, DefaultMaxOutputBytes},
		{&opts.MaxRunBytes, DefaultMaxRunBytes},
		{&opts.MaxSteps, DefaultMaxSteps},
		{&opts.MaxStoredRuns, DefaultMaxStoredRuns},
	} {
		if *d.field <= 0 {
			*d.field = d.def
		}
	}
	if opts.MaxRunAge <= 0 {
		opts.MaxRunAge = DefaultMaxRunAge
	}
	if opts.MaxStoreBytes <= 0 {
		opts.MaxStoreBytes = DefaultMaxStoreBytes
	}
	name, libDir := Name, filepath.Join(opts.DataDir, "diagrams")
	if opts.DiPeO {
		if opts.DiagramsRoot == "" {
			opts.DiagramsRoot = "."
		}
		abs, err := filepath.Abs(opts.DiagramsRoot)
		if err != nil {
			return nil, fmt.Errorf("diagram pack: diagrams_root: %w", err)
		}
		opts.DiagramsRoot = abs
		if opts.FilesRoot == "" {
			opts.FilesRoot = abs // DiPeO's file paths are relative to its project
		}
		name, libDir = DiPeOName, filepath.Join(abs, filepath.FromSlash(dipeoMCPDir))
	}
	if opts.FilesRoot == "" {
		opts.FilesRoot = filepath.Join(opts.DataDir, "diagram-files")
	}
	if abs, err := filepath.Abs(opts.FilesRoot); err == nil {
		opts.FilesRoot = abs
	}
	policy := &netPolicy{cidrs: opts.HTTPAllowCIDRs}
	for _, h := range opts.HTTPAllowHosts {
		r, err := parseHostRule(h)
		if err != nil {
			return nil, fmt.Errorf("diagram pack: HTTPAllowHosts: %v", err)
		}
		policy.hosts = append(policy.hosts, r)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With(junction.LogKeySource, Name)
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("diagram pack: %w", err)
	}
	owners := opts.Owners
	var fileOwner *ownerLock
	if owners == nil {
		var err error
		fileOwner, err = acquireOwner(filepath.Join(opts.DataDir, "diagram-owners"), "own_"+randomHex(16))
		if err != nil {
			if opts.Store != nil {
				opts.Store.Close()
			}
			return nil, fmt.Errorf("diagram pack: %w", err)
		}
		owners = fileOwner
	}
	p := &Pack{
		Pack:       junction.NewPack(name),
		opts:       opts,
		logger:     logger,
		lib:        library{dir: libDir},
		storeReady: make(chan struct{}),
		owners:     owners,
		fileOwner:  fileOwner,
		slots:      make(chan struct{}, opts.MaxConcurrentRuns),
		active:     make(map[string]*active),
		eng: engine{
			caller:         opts.Hub,
			httpClient:     opts.HTTPClient,
			allowCommands:  opts.AllowCommands,
			maxOutputBytes: opts.MaxOutputBytes,
			maxRunBytes:    opts.MaxRunBytes,
			maxSteps:       opts.MaxSteps,
			filesRoot:      opts.FilesRoot,
		},
	}
	p.eng.check = p.Check
	if p.eng.httpClient == nil {
		p.ownClient = policy.client()
		p.eng.httpClient = p.ownClient
	}
	p.base, p.stopRuns = context.WithCancelCause(context.Background())
	go p.openStore(opts.Store) // Close waits for it
	p.addTools()
	if opts.DiPeO {
		p.addDiPeO()
	}
	if err := p.addResources(); err != nil {
		p.Close()
		return nil, fmt.Errorf("diagram pack: %w", err)
	}
	return p, nil
}

// Close cancels the runs in progress (they are recorded as failed,
// interrupted by the shutdown), waits for them, and releases the store.
// Close is idempotent.
func (p *Pack) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.stopRuns(errShutdown)
		p.wg.Wait()
		<-p.storeReady
		if p.ownClient != nil {
			p.ownClient.CloseIdleConnections()
		}
		var errs []error
		if p.fileOwner != nil {
			errs = append(errs, p.fileOwner.release())
		}
		if p.store != nil {
			errs = append(errs, p.store.Close())
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// openStore opens the run store (store, unless nil) and marks failed the
// runs whose owning process is gone. It runs once, in the background.
func (p *Pack) openStore(store Store) {
	defer close(p.storeReady)
	if store == nil {
		bs, err := OpenBoltStore(filepath.Join(p.opts.DataDir, "diagram-runs.db"), &BoltOptions{Logger: p.logger})
		if err != nil {
			p.storeErr = fmt.Errorf("diagram pack: %w", err)
			p.logger.Error("opening the run store", "error", err)
			return
		}
		store = bs
	}
	p.store = store
	if relay, ok := store.(CancelRelay); ok {
		p.wg.Add(2)
		go p.watchCancels(relay)
		go p.sweepInterrupted()
	}
	if err := p.recover(context.Background()); err != nil {
		p.storeErr = fmt.Errorf("diagram pack: %w", err)
		p.logger.Error("marking interrupted runs failed", "error", err)
		return
	}
	p.prune()
}

// retention is what the store keeps, from the options.
func (p *Pack) retention() Retention {
	return Retention{MaxRuns: p.opts.MaxStoredRuns, MaxAge: p.opts.MaxRunAge, MaxBytes: p.opts.MaxStoreBytes}
}

// prune deletes the finished runs the store should no longer keep.
func (p *Pack) prune() {
	n, err := p.store.Prune(context.Background(), p.retention())
	if err != nil {
		p.logger.Warn("pruning old runs", "error", err)
	} else if n > 0 {
		p.logger.Info("pruned old runs", "runs", n)
	}
}

// pruneSoon prunes in the background, unless a prune is already under
// way. Call it from a run in progress (it joins p.wg, which the run
// holds, so Close waits for it).
func (p *Pack) pruneSoon() {
	if !p.pruning.CompareAndSwap(false, true) {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer p.pruning.Store(false)
		p.prune()
	}()
}

// waitStore waits for [Pack.openStore] and returns its error.
func (p *Pack) waitStore(ctx context.Context) error {
	select {
	case <-p.storeReady:
		return p.storeErr
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// recover marks as failed the runs whose owning process is gone.
func (p *Pack) recover(ctx context.Context) error {
	runs, err := p.store.RunningRuns(ctx)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if err := p.checkInterrupted(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// watchCancels cancels the runs of this process whose cancellation
// another process asked for, until Close.
func (p *Pack) watchCancels(relay CancelRelay) {
	defer p.wg.Done()
	// The relay repeats a request until the run's record is final; act
	// on it once.
	done := map[*active]bool{}
	err := relay.WatchCancels(p.base, p.owners.ID(), func(id string) {
		p.mu.Lock()
		a := p.active[id]
		p.mu.Unlock()
		for old := range done { // forget the runs that have ended
			select {
			case <-old.done:
				delete(done, old)
			default:
			}
		}
		if a != nil && !done[a] {
			done[a] = true
			p.logger.Info("cancelling run at another process's request", "run", id)
			a.cancel(errCancelled)
		}
	})
	if err != nil && p.base.Err() == nil {
		p.logger.Error("watching for cancel requests stopped; cancel_run through another process no longer reaches this one's runs", "error", err)
	}
}

// sweepInterrupted marks failed, every Options.InterruptedSweep until
// Close, the runs whose owner is gone.
func (p *Pack) sweepInterrupted() {
	defer p.wg.Done()
	every := p.opts.InterruptedSweep
	if every <= 0 {
		every = 10 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.base.Done():
			return
		case <-t.C:
		}
		if err := p.recover(p.base); err != nil && p.base.Err() == nil {
			p.logger.Warn("looking for runs whose process is gone", "error", err)
		}
	}
}

// checkInterrupted marks r failed if it is running but its owner is gone.
func (p *Pack) checkInterrupted(ctx context.Context, r *Run) error {
	if r.Status != StatusRunning || r.Owner == p.owners.ID() {
		return nil
	}
	if alive, err := p.owners.Alive(ctx, r.Owner); alive || err != nil {
		if err != nil {
			p.logger.Warn("cannot tell whether a run's owner is alive", "run", r.SessionID, "owner", r.Owner, "error", err)
		}
		return nil
	}
	now := time.Now().UTC()
	r.Status = StatusFailed
	r.Error = "interrupted: the junction process running it stopped (restart or crash) before it finished"
	r.EndedAt = &now
	p.logger.Warn("marking interrupted run failed", "run", r.SessionID, "diagram", r.Diagram)
	return p.store.PutRun(ctx, r)
}

var sessionIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^exec_[0-9a-f]{32}$`) })

// NewRunID returns a fresh run id, exec_ and 32 hex digits.
func NewRunID() string { return "exec_" + randomHex(16) }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// RunRequest asks for one run.
type RunRequest struct {
	// Diagram is the name of a saved diagram; Content is a diagram
	// document. Exactly one is set.
	Diagram string
	Content []byte
	// Name labels a Content run in results; empty means the document's
	// own name, or "(inline)".
	Name string
	// Input is the run's input, .input in templates and the start node's
	// output.
	Input map[string]any
	// Timeout bounds the run; zero means Options.DefaultTimeout.
	Timeout time.Duration
	// ID, if set, is the run id to use (exec_ and 32 hex digits); the
	// command line uses it to hand a background run to a child process.
	ID string
	// Host, if non-nil, is the MCP host that asked for the run: its model
	// answers person_job nodes (sampling), its user user_response nodes
	// (elicitation).
	Host Host
	// Caller, if non-nil, runs the tool nodes instead of the pack's Hub:
	// the view of the host that asked for the run, so a diagram cannot
	// reach tools that host's selection or profile leaves out.
	Caller Caller
}

// InvalidDiagramError is returned for a diagram that does not validate.
type InvalidDiagramError struct {
	Diagram  string
	Problems Problems
}

func (e *InvalidDiagramError) Error() string {
	return fmt.Sprintf("diagram %s is not valid: %v", e.Diagram, e.Problems)
}

// ErrTooManyRuns is returned when Options.MaxConcurrentRuns runs are in
// progress.
var ErrTooManyRuns = errors.New("too many diagram runs in progress")

func (p *Pack) validateOptions() *ValidateOptions {
	tools := p.opts.Hub.Tools()
	names := make(map[string]bool, len(tools))
	for _, t := range tools {
		names[t.Tool.Name] = true
	}
	return &ValidateOptions{
		HasTool:       func(n string) bool { return names[n] },
		AllowCommands: p.opts.AllowCommands,
		MaxNodes:      p.opts.MaxNodes,
		MaxFanOut:     p.opts.MaxFanOut,
	}
}

// Check parses and validates a diagram document against this hub's tools.
func (p *Pack) Check(src []byte) (*Diagram, Problems) {
	d, ps := Parse(src)
	if d == nil {
		return nil, ps
	}
	return d, append(ps, Validate(d, p.validateOptions())...)
}

func (p *Pack) load(req RunRequest) (string, *Diagram, error) {
	var name string
	src := req.Content
	switch {
	case req.Diagram != "" && len(req.Content) > 0:
		return "", nil, errors.New("give a diagram name or diagram content, not both")
	case req.Diagram != "" && p.opts.DiPeO:
		// DiPeO's lookup, as dipeo_run's: a name in its folders, or a
		// path under the diagrams root.
		rel, b, err := p.dipeoLoad(req.Diagram)
		if err != nil {
			return req.Diagram, nil, err
		}
		name, src = filepath.ToSlash(rel), b
	case req.Diagram != "":
		name = normName(req.Diagram)
		if err := checkNameParam("diagram", name); err != nil {
			return name, nil, fmt.Errorf("%w: diagram names a saved diagram (as search lists them); to run a document, give it as diagram_content", err)
		}
		b, err := p.lib.load(name)
		if err != nil {
			return name, nil, err
		}
		src = b
	case len(req.Content) > 0:
		name = "(inline)"
	default:
		return "", nil, errors.New("diagram parameter is required (a saved diagram's name, or diagram_content)")
	}
	d, ps := p.Check(src)
	if errs := ps.Errors(); len(errs) > 0 {
		return name, nil, &InvalidDiagramError{Diagram: name, Problems: errs}
	}
	if name == "(inline)" {
		if req.Name != "" {
			name = req.Name
		} else if d.Name != "" {
			name = d.Name
		}
	}
	return name, d, nil
}

// begin validates the request, takes a run slot and records the run as
// running. execute (or end, if the run never starts) releases it.
func (p *Pack) begin(parent context.Context, req RunRequest) (*Run, *Diagram, context.Context, *active, error) {
	timeout := req.Timeout
	timeoutCause := fmt.Errorf("run timed out after %s, the timeout it asked for", timeout)
	if timeout == 0 {
		timeout = p.opts.DefaultTimeout
		timeoutCause = fmt.Errorf("run timed out after %s (the diagram pack's default_run_timeout setting; a run may ask for up to %s)", timeout, p.opts.MaxTimeout)
	}
	if timeout < 0 || timeout > p.opts.MaxTimeout {
		return nil, nil, nil, nil, fmt.Errorf("timeout must be between 1s and %s (the diagram pack's max_run_timeout setting), not %s", p.opts.MaxTimeout, timeout)
	}
	if n := jsonSize(req.Input); n > p.opts.MaxRunBytes {
		return nil, nil, nil, nil, &LimitError{Setting: "max_run_bytes", msg: fmt.Sprintf("input_data is %d bytes, over the limit of %d bytes per run", n, p.opts.MaxRunBytes)}
	}
	if req.ID != "" && !sessionIDPattern().MatchString(req.ID) {
		return nil, nil, nil, nil, fmt.Errorf("run id %q: want exec_ and 32 lower-case hex digits", req.ID)
	}
	name, d, err := p.load(req)
	if err != nil {
		return &Run{Diagram: name}, nil, nil, nil, err
	}
	select {
	case p.slots <- struct{}{}:
	default:
		return nil, nil, nil, nil, fmt.Errorf("%w: the limit is %d (the diagram pack's max_concurrent_runs setting); try again when one finishes", ErrTooManyRuns, p.opts.MaxConcurrentRuns)
	}
	id := req.ID
	if id == "" {
		id = NewRunID()
	}
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(p.base, func() { cancel(errShutdown) })
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, timeout, timeoutCause)
	a := &active{done: make(chan struct{}), cancel: func(cause error) {
		cancel(cause)
		cancelTimeout()
		stop()
	}}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		a.cancel(errShutdown)
		<-p.slots
		return nil, nil, nil, nil, errShutdown
	}
	p.wg.Add(1)
	p.active[id] = a
	p.mu.Unlock()

	run := &Run{
		SessionID:     id,
		Diagram:       name,
		Status:        StatusRunning,
		ExecutedNodes: []string{},
		NodeOutputs:   map[string]any{},
		StartedAt:     time.Now().UTC(),
		Owner:         p.owners.ID(),
	}
	if err := p.waitStore(ctx); err != nil {
		p.end(id, a)
		return nil, nil, nil, nil, err
	}
	if err := p.store.PutRun(ctx, run); err != nil {
		p.end(id, a)
		return nil, nil, nil, nil, err
	}
	p.logger.Info("run started", "run", id, "diagram", name)
	return run, d, ctx, a, nil
}

func (p *Pack) end(id string, a *active) {
	a.cancel(context.Canceled)
	p.mu.Lock()
	delete(p.active, id)
	p.mu.Unlock()
	// Free the slot before waking Wait: a caller that waits for a run to
	// end and then starts another must find the slot free.
	<-p.slots
	close(a.done)
	p.wg.Done()
}

// execute runs d and records the result.
func (p *Pack) execute(ctx context.Context, run *Run, d *Diagram, input map[string]any, a *active, parent context.Context, caller Caller, host Host) *Run {
	defer p.end(run.SessionID, a)
	eng := p.eng
	if caller != nil {
		eng.caller = caller
	}
	eng.host = host
	// Progress and the final record are written even after ctx is done.
	wctx := context.WithoutCancel(ctx)
	saver := startProgress(wctx, p, run)
	out := eng.run(ctx, d, input, saver.step)
	saver.stop()
	now := time.Now().UTC()
	run.EndedAt = &now
	run.ExecutedNodes = out.executed
	run.NodeOutputs = out.outputs
	switch {
	case out.err == nil:
		run.Status = StatusCompleted
		run.Output = out.output
	case errors.Is(out.err, errCancelled):
		run.Status, run.Error = StatusCancelled, errCancelled.Error()
	case errors.Is(out.err, errCallerCancelled):
		run.Status, run.Error = StatusCancelled, errCallerCancelled.Error()
	case parent != nil && parent.Err() != nil && !errors.Is(out.err, errShutdown):
		run.Status, run.Error = StatusCancelled, "the caller cancelled the request"
	default:
		run.Status, run.Error = StatusFailed, out.err.Error()
	}
	if err := p.store.PutRun(wctx, run); err != nil {
		p.logger.Error("saving run result", "run", run.SessionID, "error", err)
	}
	p.logger.Info("run ended", "run", run.SessionID, "diagram", run.Diagram, "status", run.Status, "error", run.Error)
	p.pruneSoon()
	return run
}

// Run runs a diagram and waits for it. A run that fails is still a
// result (Status failed); the error is for runs that could not start.
func (p *Pack) Run(ctx context.Context, req RunRequest) (*Run, error) {
	run, d, rctx, a, err := p.begin(ctx, req)
	if err != nil {
		return run, err
	}
	return p.execute(rctx, run, d, req.Input, a, ctx, req.Caller, req.Host), nil
}

// Start starts a run in the background and returns its record at once.
// The run belongs to the pack: Close cancels it.
func (p *Pack) Start(req RunRequest) (*Run, error) {
	run, d, rctx, a, err := p.begin(p.base, req)
	if err != nil {
		return run, err
	}
	snapshot := *run
	snapshot.ExecutedNodes, snapshot.NodeOutputs = []string{}, map[string]any{}
	go p.execute(rctx, run, d, req.Input, a, nil, req.Caller, req.Host)
	return &snapshot, nil
}

// Wait waits for the run id to finish if it is in progress in this
// process.
func (p *Pack) Wait(ctx context.Context, id string) error {
	p.mu.Lock()
	a := p.active[id]
	p.mu.Unlock()
	if a == nil {
		return nil
	}
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Result returns the record of run id. A run left "running" by a process
// that is gone is marked failed first.
func (p *Pack) Result(ctx context.Context, id string) (*Run, error) {
	if !sessionIDPattern().MatchString(id) {
		return nil, fmt.Errorf("Invalid session_id format: %s", id)
	}
	if err := p.waitStore(ctx); err != nil {
		return nil, err
	}
	r, err := p.store.Run(ctx, id)
	if err != nil {
		if errors.Is(err, ErrRunNotFound) {
			return nil, fmt.Errorf("Execution not found: %s: %w", id, ErrRunNotFound)
		}
		return nil, err
	}
	if err := p.checkInterrupted(ctx, r); err != nil {
		return nil, err
	}
	return r, nil
}

// Cancel cancels run id, waits for it to stop, and returns its final
// record. A run in progress in another process is cancelled through the
// store when the store is a [CancelRelay].
func (p *Pack) Cancel(ctx context.Context, id string) (*Run, error) {
	r, err := p.Result(ctx, id)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	a := p.active[id]
	p.mu.Unlock()
	if a == nil {
		if r.Status != StatusRunning {
			return r, nil
		}
		relay, ok := p.store.(CancelRelay)
		if !ok {
			return r, fmt.Errorf("run %s belongs to another junction process; cancel it there", id)
		}
		return p.cancelElsewhere(ctx, relay, id)
	}
	a.cancel(errCancelled)
	select {
	case <-a.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return p.store.Run(ctx, id)
}

// remoteCancelPoll is how often Cancel reads the record of a run that
// another process is cancelling.
const remoteCancelPoll = 100 * time.Millisecond

// cancelElsewhere asks the process running run id to cancel it and waits
// until its record is final: the owner records the cancellation, or,
// if the owner is gone, Result fails the run.
func (p *Pack) cancelElsewhere(ctx context.Context, relay CancelRelay, id string) (*Run, error) {
	if err := relay.RequestCancel(ctx, id); err != nil {
		return nil, fmt.Errorf("asking the process running %s to cancel it: %w", id, err)
	}
	t := time.NewTicker(remoteCancelPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("run %s: its process was asked to cancel it and has not yet: %w", id, context.Cause(ctx))
		case <-t.C:
		}
		r, err := p.Result(ctx, id)
		if err != nil {
			return nil, err
		}
		if r.Status != StatusRunning {
			return r, nil
		}
	}
}

// Compiled is the result of [Pack.Compile].
type Compiled struct {
	Valid     bool
	Errors    Problems
	Warnings  Problems
	NodeCount int
	EdgeCount int
	PushedAs  string
}

// Compile validates src and, if it is valid and pushAs is not empty,
// saves it under that name. A bad name is an error; a bad diagram is not
// (its problems are in the result).
func (p *Pack) Compile(src []byte, pushAs string) (*Compiled, error) {
	name := normName(pushAs)
	if pushAs != "" {
		if err := checkName(name); err != nil {
			return nil, err
		}
	}
	d, ps := p.Check(src)
	c := &Compiled{Errors: Problems{}, Warnings: Problems{}}
	for _, pr := range ps {
		if pr.Severity == "error" {
			c.Errors = append(c.Errors, pr)
		} else {
			c.Warnings = append(c.Warnings, pr)
		}
	}
	c.Valid = len(c.Errors) == 0
	if d != nil {
		c.NodeCount, c.EdgeCount = len(d.Nodes), len(d.Edges)
	}
	if !c.Valid || pushAs == "" {
		return c, nil
	}
	if err := p.lib.save(name, src); err != nil {
		return nil, err
	}
	p.addDiagramResource(name)
	c.PushedAs = name
	p.logger.Info("diagram saved", "diagram", name)
	return c, nil
}

// Diagrams lists the saved diagrams by name.
func (p *Pack) Diagrams() ([]string, error) { return p.lib.names() }

// Source returns a saved diagram's document.
func (p *Pack) Source(name string) ([]byte, error) { return p.lib.load(name) }
