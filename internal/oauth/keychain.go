package oauth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/zalando/go-keyring"
)

// EnvKeychain set to 0 keeps the token store's key in a file even where
// there is an OS keychain.
const EnvKeychain = "JUNCTION_OAUTH_KEYCHAIN"

// keychainService is the service name of the store key's keychain item;
// the account is "oauth-store " + the store's directory.
const keychainService = "junction"

// keychainTimeout bounds a keychain call: a D-Bus Secret Service that is
// being started on demand, or a macOS prompt left unanswered, must not
// hold a hub.
var keychainTimeout = 10 * time.Second

// OpenStore returns the token store in [DefaultDir]. Its key is kept in
// the OS keychain where there is one (the macOS keychain, the Windows
// credential manager, a Secret Service such as GNOME Keyring or KWallet
// over the D-Bus session bus), through zalando/go-keyring; otherwise,
// and for a store that already has a key file, in a 0600 key file.
func OpenStore(getenv func(string) string) (*FileStore, error) {
	dir, err := DefaultDir(getenv)
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	s := NewFileStore(dir)
	if keychainUsable(getenv) {
		s.key = func() ([]byte, error) { return keychainStoreKey(dir) }
	}
	return s, nil
}

// keychainUsable reports whether to try the OS keychain. On Linux and
// the BSDs only with a D-Bus session bus: without one, asking for it
// would try to launch a bus daemon.
func keychainUsable(getenv func(string) string) bool {
	if getenv(EnvKeychain) == "0" {
		return false
	}
	switch runtime.GOOS {
	case "darwin", "windows":
		return true
	}
	return getenv("DBUS_SESSION_BUS_ADDRESS") != ""
}

// keychainStoreKey returns the key of the store in dir from the
// keychain, creating it there the first time. A store whose key is in a
// file keeps it there. The file "keychain" in dir records that the key
// is in the keychain, so that a run that cannot reach the keychain says
// so rather than starting a store of its own.
func keychainStoreKey(dir string) ([]byte, error) {
	keyFile := filepath.Join(dir, "key")
	if _, err := os.Stat(keyFile); err == nil {
		return fileKey(keyFile)
	}
	marker := filepath.Join(dir, "keychain")
	account := "oauth-store " + dir
	v, err := withTimeout(func() (string, error) { return keyring.Get(keychainService, account) })
	if err == nil {
		key, derr := base64.StdEncoding.DecodeString(v)
		if derr != nil || len(key) != 32 {
			return nil, fmt.Errorf("token store key in the OS keychain (%s, %s): not a 32-byte base64 key", keychainService, account)
		}
		return key, nil
	}
	if errors.Is(err, keyring.ErrNotFound) {
		key := make([]byte, 32)
		rand.Read(key)
		_, err = withTimeout(func() (string, error) {
			return "", keyring.Set(keychainService, account, base64.StdEncoding.EncodeToString(key))
		})
		if err == nil {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, err
			}
			if err := os.WriteFile(marker, []byte(account+"\n"), 0o600); err != nil {
				return nil, err
			}
			return key, nil
		}
	}
	if _, serr := os.Stat(marker); serr == nil || !errors.Is(serr, fs.ErrNotExist) {
		return nil, fmt.Errorf("the token store's key is in the OS keychain, which junction cannot reach here (%v); run where the keychain is unlocked, or set %s=0 and log in again to keep the key in a file", err, EnvKeychain)
	}
	return fileKey(keyFile)
}

// withTimeout runs f, giving up after keychainTimeout.
func withTimeout(f func() (string, error)) (string, error) {
	type result struct {
		v   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(keychainTimeout):
		return "", fmt.Errorf("the OS keychain did not answer in %v", keychainTimeout)
	}
}
