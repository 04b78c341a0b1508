//go:build linux

package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock, called directly (golang.org/x/sys/unix): the rules are
// applied to one thread, the one that then execs the server, so no
// all-threads machinery is needed.

const (
	landlockRulePathBeneath = 1
	landlockRuleNetPort     = 2

	// Rights that apply to files (the kernel refuses directory rights
	// on a rule for a file).
	llFileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	llRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR
	llDevice = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV | unix.LANDLOCK_ACCESS_FS_TRUNCATE
)

// llFS returns the file system rights ABI abi handles.
func llFS(abi int) uint64 {
	switch {
	case abi <= 0:
		return 0
	case abi == 1:
		return 1<<13 - 1
	case abi == 2:
		return 1<<14 - 1
	case abi <= 4:
		return 1<<15 - 1
	default: // 5 and later; RESOLVE_UNIX (ABI 9) is left unhandled: the proxy socket is reached over TCP, other sockets are outside every rule anyway
		return 1<<16 - 1
	}
}

type landlockNetPortAttr struct {
	allowedAccess uint64
	port          uint64
}

// landlockABI returns the kernel's Landlock ABI version, 0 without it.
func landlockABI() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(v)
}

// landlockRules is a ruleset being built.
type landlockRules struct {
	abi int
	fd  int
	fs  uint64
}

// newLandlock creates a ruleset handling every file system right of the
// ABI, TCP bind and connect (ABI 4) and, with scope, signals and
// abstract unix sockets (ABI 6).
func newLandlock(abi int) (*landlockRules, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_fs: llFS(abi)}
	size := unsafe.Sizeof(attr.Handled_access_fs)
	if abi >= 4 {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size += unsafe.Sizeof(attr.Handled_access_net)
	}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size += unsafe.Sizeof(attr.Scoped)
	}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return nil, fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	return &landlockRules{abi: abi, fd: int(fd), fs: attr.Handled_access_fs}, nil
}

// addPath allows rights beneath path (on path alone for a file).
// missing reports a path that does not exist, which is not an error.
func (l *landlockRules) addPath(path string, rights uint64) (missing bool, err error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT {
			return true, nil
		}
		return false, fmt.Errorf("%s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= llFileRights
	}
	rights &= l.fs
	if rights == 0 {
		return false, nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(l.fd), landlockRulePathBeneath, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return false, fmt.Errorf("landlock rule for %s: %w", path, e)
	}
	return false, nil
}

// allowConnect allows TCP connections to port (ABI 4).
func (l *landlockRules) allowConnect(port int) error {
	if l.abi < 4 {
		return nil
	}
	attr := landlockNetPortAttr{allowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(l.fd), landlockRuleNetPort, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return fmt.Errorf("landlock rule for port %d: %w", port, e)
	}
	return nil
}

// restrict applies the ruleset to the calling thread (no_new_privs must
// be set) and closes it.
func (l *landlockRules) restrict() error {
	defer unix.Close(l.fd)
	_, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(l.fd), 0, 0)
	if e != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return nil
}

// deviceFiles are the devices every sandbox may use.
var deviceFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
