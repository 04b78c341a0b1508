package files

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Limits bound what [Unpack] accepts. Zero fields take the defaults.
type Limits struct {
	// MaxBytes bounds the total size of the regular files unpacked
	// (default 1 GiB).
	MaxBytes int64
	// MaxEntries bounds the number of tar entries (default 10000).
	MaxEntries int
	// Paths bound each entry's name.
	Paths PathLimits
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = 1 << 30
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = 10000
	}
	return l
}

// UnpackStats counts what [Unpack] wrote.
type UnpackStats struct {
	Files, Dirs, Symlinks int
	Bytes                 int64
}

// Unpack reads a gzip-compressed tarball from r and writes its contents
// under dst, refusing anything that could reach outside dst: absolute or
// ".." entry names, entries under a symbolic link, symbolic links that are
// absolute or lead out of dst, hard links, device and FIFO entries. It
// stops at the first violation or limit with an error naming the entry;
// what was written so far stays for the caller to remove (the deploy host
// unpacks into a staging directory and removes it on failure).
func Unpack(r io.Reader, dst *os.Root, lim Limits) (UnpackStats, error) {
	lim = lim.withDefaults()
	var st UnpackStats
	zr, err := gzip.NewReader(r)
	if err != nil {
		return st, fmt.Errorf("not a gzip stream: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	entries := 0
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return st, fmt.Errorf("read tar: %w", err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		if entries++; entries > lim.MaxEntries {
			return st, fmt.Errorf("more than %d entries", lim.MaxEntries)
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return st, fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
		if name == "." {
			continue // "./" itself
		}
		if err := lim.Paths.Check(name); err != nil {
			return st, fmt.Errorf("entry %q: %w", truncateName(hdr.Name, 64), err)
		}
		if err := checkParents(dst, name); err != nil {
			return st, fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := dst.MkdirAll(name, 0o750); err != nil {
				return st, fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
			st.Dirs++
		case tar.TypeReg:
			if hdr.Size < 0 || hdr.Size > lim.MaxBytes-st.Bytes {
				return st, fmt.Errorf("entry %q: unpacked size over the limit of %d bytes", hdr.Name, lim.MaxBytes)
			}
			if err := writeEntry(dst, name, hdr, tr); err != nil {
				return st, fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
			st.Files++
			st.Bytes += hdr.Size
		case tar.TypeSymlink:
			if err := checkLink(name, hdr.Linkname); err != nil {
				return st, fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
			if err := mkParent(dst, name); err != nil {
				return st, fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
			if err := dst.Symlink(hdr.Linkname, name); err != nil {
				return st, fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
			st.Symlinks++
		case tar.TypeLink:
			return st, fmt.Errorf("entry %q: hard links are not accepted", hdr.Name)
		default:
			return st, fmt.Errorf("entry %q: type %q is not accepted (only files, directories and relative symbolic links)", hdr.Name, string(hdr.Typeflag))
		}
	}
}

// entryName cleans a tar entry name, refusing absolute and escaping ones.
func entryName(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, "\\\x00") {
		return "", errors.New("invalid name")
	}
	if strings.HasPrefix(name, "/") || filepath.VolumeName(filepath.FromSlash(name)) != "" {
		return "", errors.New("absolute path")
	}
	n := path.Clean(name)
	if n == ".." || strings.HasPrefix(n, "../") {
		return "", errors.New("path escapes the deploy directory")
	}
	return n, nil
}

// checkLink refuses a symbolic link at name whose target is absolute or
// resolves (lexically, from name's directory) outside the root. Lexical
// checking is exact because no entry may be written under a link
// (checkParents).
func checkLink(name, target string) error {
	if target == "" || strings.ContainsAny(target, "\\\x00") {
		return errors.New("invalid link target")
	}
	if strings.HasPrefix(target, "/") || filepath.VolumeName(filepath.FromSlash(target)) != "" {
		return fmt.Errorf("absolute symbolic link to %q", target)
	}
	t := path.Clean(path.Join(path.Dir(name), target))
	if t == ".." || strings.HasPrefix(t, "../") {
		return fmt.Errorf("symbolic link to %q leads out of the deploy directory", target)
	}
	return nil
}

// checkParents refuses an entry below a symbolic link, and one that would
// replace an existing entry.
func checkParents(dst *os.Root, name string) error {
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		fi, err := dst.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("is below symbolic link %q", p)
		}
	}
	if fi, err := dst.Lstat(name); err == nil && !(fi.IsDir()) {
		return errors.New("duplicate entry")
	}
	return nil
}

func mkParent(dst *os.Root, name string) error {
	if d := path.Dir(name); d != "." {
		return dst.MkdirAll(d, 0o750)
	}
	return nil
}

func writeEntry(dst *os.Root, name string, hdr *tar.Header, r io.Reader) error {
	if err := mkParent(dst, name); err != nil {
		return err
	}
	mode := os.FileMode(0o600)
	if hdr.Mode&0o111 != 0 {
		mode = 0o700
	}
	f, err := dst.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, hdr.Size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
