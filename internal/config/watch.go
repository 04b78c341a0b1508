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
}

// Run watches until ctx is done, then returns ctx.Err(). It fails at once
// if the file's directory cannot be watched.
func (w *Watcher) Run(ctx context.Context) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("config watch: %w", err)
	}
	defer fw.Close()
	dir := filepath.Dir(w.Path)
	if err := fw.Add(dir); err != nil {
		return fmt.Errorf("config watch %s: %w", dir, err)
	}
	// A config that is a symlink into another directory (a dotfiles
	// repository) changes there; watch that directory too.
	if real, err := filepath.EvalSymlinks(w.Path); err == nil {
		if rdir := filepath.Dir(real); rdir != dir {
			if err := fw.Add(rdir); err != nil {
				return fmt.Errorf("config watch %s: %w", rdir, err)
			}
		}
	}
	debounce := w.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	var last [sha256.Size]byte
	if w.Current != nil {
		last = w.Current.digest
	} else if data, err := os.ReadFile(w.Path); err == nil {
		last = sha256.Sum256(data)
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
		if !force && c.digest == last {
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
		last = c.digest
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
