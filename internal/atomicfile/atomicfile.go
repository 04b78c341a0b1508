// Package atomicfile replaces files so that a reader, or a crash, sees
// the old file or the new one and never a part of either: the bytes go
// to a temporary file in the same directory, which is synced, given its
// mode, and renamed over the path. It is the one way junction rewrites a
// file it keeps (the lock file, host configuration files, the token
// store, saved diagrams). It imports only the standard library.
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces the file at path with data, with mode perm (0o600 when
// perm is 0). When path is a symbolic link (a dotfiles checkout, say),
// the file it leads to is replaced and the link kept. The directory must
// exist. On failure the old file is intact and no temporary file is
// left.
func Write(path string, data []byte, perm fs.FileMode) (err error) {
	if perm == 0 {
		perm = 0o600
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename in dir durable where the system allows it; a
// directory that cannot be synced (some file systems, other systems)
// leaves the rename done but perhaps not yet on disk, which is no worse
// than before the write.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
