package config

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long a [Watcher] waits after the last file event
// before it reads the file, so that an editor's burst of writes and
// renames is read once, complete.
const DefaultDebounce = 200 * time.Millisecond

// Watcher reloads a config file when it changes or when a signal arrives,
// and hands over only configs that parse and validate. A bad file is
// reported through OnError and changes nothing: the caller keeps running
// the config it has.
//
// It watches the file's directory, not the file, because editors and
// config managers replace files by renaming a new one over them (vim,
// Kubernetes ConfigMaps), which a watch on the old file would miss. Any
// event in the directory starts the debounce timer; when it fires the file
// is read, and if its bytes are the ones already in force nothing happens.
//
// Files the config depends on (the lock file, see Related) are watched the
// same way, by the same watcher: a change of their bytes reloads the
// config as a change of its own does, so that the reload reads them again.
type Watcher struct {
	// Path of the config file.
	Path string
	// Getenv resolves ${VAR} references; nil means none is set.
	Getenv func(string) string
	// Signals, if non-nil, forces a reload for every value received, even
	// when the file is unchanged (the environment may have changed). The
	// daemon feeds it with signal.Notify(ch, syscall.SIGHUP); tests send on
	// it directly.
	Signals <-chan os.Signal
	// Debounce is the quiet time after file events; zero means
	// DefaultDebounce.
	Debounce time.Duration
	// Current is the config in force. Writes that leave the file's bytes as
	// they were when Current was parsed are ignored. Nil means: the file as
	// it is when Run starts.
	Current *Config
	// OnChange receives each new valid config. It returns an error when
	// it could not apply the config (a pack it does not know): the error
	// goes to OnError, and the config counts as not applied, so writing the
	// same bytes again retries. OnError receives every failed reload and
	// watch error. Both are called from Run's goroutine, one at a time;
	// they should return quickly. Nil means ignore.
	OnChange func(*Config) error
	OnError  func(error)
	// Related, if non-nil, returns the other files that applying a config
	// reads (the daemon's: the lock file), absolute or relative to the
	// working directory. Their directories are watched too, so renames
	// over them are seen, and a change of their bytes (appearing and going
	// away included) reloads the config, unchanged as it may be. It is
	// asked for the config in force, at the start and after every applied
	// reload, as the config may name other files. A directory that cannot
	// be watched is reported through OnError; the file is still read on
	// each reload.
	Related func(*Config) []string
	// OnStart, if non-nil, is called once, from Run's goroutine, when the
	// watches are in place: a change made after it is called is seen.
	OnStart func()
}

// Run watches until ctx is done, then returns ctx.Err(). It fails at once
// if the config file's directory cannot be watched.
func (w *Watcher) Run(ctx context.Context) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("config watch: %w", err)
	}
	defer fw.Close()
	watched := make(map[string]bool) // directories
	// watchFile watches the directory of path, and that of its target if
	// it is a symlink into another directory (a config in a dotfiles
	// repository), which is where it changes.
	watchFile := func(path string) error {
		dirs := []string{filepath.Dir(path)}
		if real, err := filepath.EvalSymlinks(path); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
		for _, dir := range dirs {
			if watched[dir] {
				continue
			}
			if err := fw.Add(dir); err != nil {
				return fmt.Errorf("config watch %s: %w", dir, err)
			}
			watched[dir] = true
		}
		return nil
	}
	if err := watchFile(w.Path); err != nil {
		return err
	}
	dir := filepath.Dir(w.Path)
	debounce := w.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	// watchRelated watches the related files of c, the config in force.
	watchRelated := func(c *Config) {
		for _, p := range w.related(c) {
			if err := watchFile(p); err != nil && w.OnError != nil {
				w.OnError(fmt.Errorf("%w (a change of %s is seen on the next reload only)", err, p))
			}
		}
	}
	// last is the digest of what is in force: the config file's bytes and
	// those of its related files.
	var last [sha256.Size]byte
	cur := w.Current
	if cur == nil {
		cur, _ = Load(w.Path, w.Getenv)
	}
	if cur != nil {
		watchRelated(cur)
		last = w.digest(cur)
	} else if data, err := os.ReadFile(w.Path); err == nil {
		last = sha256.Sum256(data) // a file that does not load yet
	}
	if w.OnStart != nil {
		w.OnStart()
	}

	sigs := w.Signals
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	reload := func(force bool) {
		c, err := Load(w.Path, w.Getenv)
		if err != nil {
			if w.OnError != nil {
				w.OnError(err)
			}
			return
		}
		sum := w.digest(c)
		if !force && sum == last {
			return
		}
		if w.OnChange != nil {
			if err := w.OnChange(c); err != nil {
				if w.OnError != nil {
					w.OnError(err)
				}
				return
			}
		}
		last = sum
		watchRelated(c)
	}

	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-fw.Events:
			if !ok {
				return fmt.Errorf("config watch %s: watcher closed", dir)
			}
			timer.Reset(debounce)
		case err, ok := <-fw.Errors:
			if !ok {
				return fmt.Errorf("config watch %s: watcher closed", dir)
			}
			if w.OnError != nil {
				w.OnError(fmt.Errorf("config watch %s: %w", dir, err))
			}
		case <-timer.C:
			reload(false)
		case _, ok := <-sigs:
			if !ok {
				// A closed channel would spin; stop listening to it.
				sigs = nil
				continue
			}
			timer.Stop()
			reload(true)
		}
	}
}

func (w *Watcher) related(c *Config) []string {
	if w.Related == nil {
		return nil
	}
	return w.Related(c)
}

// digest sums c's bytes and those of its related files, each with its
// name. A file that cannot be read counts by its error, so its appearing,
// going away or becoming readable is a change.
func (w *Watcher) digest(c *Config) [sha256.Size]byte {
	related := w.related(c)
	if len(related) == 0 {
		return c.digest
	}
	h := sha256.New()
	h.Write(c.digest[:])
	for _, p := range related {
		fmt.Fprintf(h, "\x00%s\x00", p)
		if data, err := os.ReadFile(p); err != nil {
			fmt.Fprintf(h, "error: %v", err)
		} else {
			sum := sha256.Sum256(data)
			h.Write(sum[:])
		}
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
