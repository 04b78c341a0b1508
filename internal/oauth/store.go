package oauth

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/junction-mcp/junction/internal/atomicfile"
	"github.com/junction-mcp/junction/internal/seal"

	"golang.org/x/oauth2"

	"github.com/junction-mcp/junction/internal/filelock"
)

// Entry is what is stored for one server: the token and the client that
// refreshes it.
type Entry struct {
	// Name is the server's name when it was logged in to (for display).
	Name string `json:"name,omitempty"`
	// Resource is the server's URL, the key.
	Resource     string   `json:"resource"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret,omitempty"`
	TokenURL     string   `json:"token_url"`
	AuthStyle    int      `json:"auth_style,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	// Wanted are scopes the server asked for that no login has granted
	// yet (a hub met the challenge); the next login asks for them too.
	Wanted []string `json:"wanted_scopes,omitempty"`
	// Issuer is the authorization server's issuer, and Registered says
	// that junction registered the client itself (RFC 7591): a later
	// login with the same authorization server, for this server or
	// another, uses the client again instead of registering a new one.
	Issuer     string `json:"issuer,omitempty"`
	Registered bool   `json:"registered,omitempty"`
	// DPoPKey is the private JWK a DPoP-bound token is bound to.
	DPoPKey json.RawMessage `json:"dpop_key,omitempty"`
	Token   *oauth2.Token   `json:"token"`
	Saved   time.Time       `json:"saved"`
	// User is the hub user the token belongs to, for a server with
	// per-user credentials; empty for the hub's own token. A store keeps
	// one entry per user and resource ([UserKey]).
	User string `json:"user,omitempty"`
}

// Key is the entry's key in a store: its resource, or, for a user's
// entry, [UserKey].
func (e *Entry) Key() string {
	if e.User == "" {
		return e.Resource
	}
	return UserKey(e.User, e.Resource)
}

// UserKey is the store key of user's entry for resource: the resource
// URL with "#user=" and the user, escaped (a resource URL has no
// fragment).
func UserKey(user, resource string) string {
	return resource + "#user=" + url.QueryEscape(user)
}

// UserStore is user's view of the store base: their entries only, by
// resource, as a [Client] with per-user credentials keeps them. Entries
// saved through it carry User.
func UserStore(base Store, user string) Store { return userStore{base, user} }

type userStore struct {
	base Store
	user string
}

func (s userStore) Load(resource string) (*Entry, error) {
	e, err := s.base.Load(UserKey(s.user, resource))
	if e == nil || err != nil || e.User != s.user {
		return nil, err
	}
	return e, nil
}

func (s userStore) Save(e *Entry) error {
	c := *e
	c.User = s.user
	return s.base.Save(&c)
}

func (s userStore) Delete(resource string) (bool, error) {
	return s.base.Delete(UserKey(s.user, resource))
}

// Lock locks the user's key for resource, where base is a [Locker].
func (s userStore) Lock(ctx context.Context, resource string) (func(), error) {
	if l, ok := s.base.(Locker); ok {
		return l.Lock(ctx, UserKey(s.user, resource))
	}
	return func() {}, nil
}

func (s userStore) List() ([]*Entry, error) {
	all, err := s.base.List()
	var out []*Entry
	for _, e := range all {
		if e.User == s.user {
			out = append(out, e)
		}
	}
	return out, err
}

// A Locker is a Store that several processes share (the replicas of a
// hub on one database), and that can hold a lock on one key across
// them, so that a token about to expire is refreshed once, by one of
// them, and the others read the new one.
type Locker interface {
	Lock(ctx context.Context, key string) (unlock func(), err error)
}

// Store keeps entries by resource URL.
type Store interface {
	// Load returns the entry for resource, or nil when there is none.
	Load(resource string) (*Entry, error)
	Save(e *Entry) error
	// Delete removes the entry; it reports whether there was one.
	Delete(resource string) (bool, error)
	List() ([]*Entry, error)
}

// FileStore keeps entries in one file, encrypted with AES-256-GCM under
// a random key kept in a key file beside it; both files are 0600 in a
// 0700 directory. Writes replace the file atomically, and each change
// (read, change, write) holds a lock file beside it, so that processes
// sharing the store (a hub refreshing tokens, junction auth login) do
// not lose each other's changes.
type FileStore struct {
	path string
	key  func() ([]byte, error)
	mu   sync.Mutex
}

// DefaultDir is where the token store lives: $JUNCTION_OAUTH_DIR, or
// junction/oauth under the user's config directory.
func DefaultDir(getenv func(string) string) (string, error) {
	if d := getenv("JUNCTION_OAUTH_DIR"); d != "" {
		return d, nil
	}
	base, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "junction", "oauth"), nil
}

// NewFileStore returns the store in dir (created when first written).
func NewFileStore(dir string) *FileStore {
	s := &FileStore{path: filepath.Join(dir, "tokens.enc")}
	s.key = func() ([]byte, error) { return fileKey(filepath.Join(dir, "key")) }
	return s
}

// Path is the encrypted file.
func (s *FileStore) Path() string { return s.path }

func (s *FileStore) read() (map[string]*Entry, error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*Entry{}, nil
	}
	if err != nil {
		return nil, err
	}
	key, err := s.key()
	if err != nil {
		return nil, err
	}
	plain, err := openFile(key, b)
	if err != nil {
		return nil, fmt.Errorf("token store %s: %w", s.path, err)
	}
	m := map[string]*Entry{}
	if err := json.Unmarshal(plain, &m); err != nil {
		return nil, fmt.Errorf("token store %s: %w", s.path, err)
	}
	return m, nil
}

func (s *FileStore) write(m map[string]*Entry) error {
	plain, err := json.Marshal(m)
	if err != nil {
		return err
	}
	key, err := s.key()
	if err != nil {
		return err
	}
	sealed, err := sealFile(key, plain)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(s.path, sealed, 0o600)
}

func (s *FileStore) Load(resource string) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.read()
	if err != nil {
		return nil, err
	}
	return m[resource], nil
}

// lockTimeout bounds the wait for another process's change of the store.
const lockTimeout = 10 * time.Second

// change locks the store against other processes for one
// read-modify-write.
func (s *FileStore) change() (unlock func(), err error) {
	unlock, err = filelock.Lock(s.path+".lock", lockTimeout)
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	return unlock, nil
}

func (s *FileStore) Save(e *Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.change()
	if err != nil {
		return err
	}
	defer unlock()
	m, err := s.read()
	if err != nil {
		m = map[string]*Entry{} // unreadable (another key): start over
	}
	c := *e
	c.Saved = time.Now().UTC()
	m[e.Key()] = &c
	return s.write(m)
}

func (s *FileStore) Delete(resource string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.change()
	if err != nil {
		return false, err
	}
	defer unlock()
	m, err := s.read()
	if err != nil {
		return false, err
	}
	if _, ok := m[resource]; !ok {
		return false, nil
	}
	delete(m, resource)
	return true, s.write(m)
}

func (s *FileStore) List() ([]*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.read()
	if err != nil {
		return nil, err
	}
	out := make([]*Entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// fileKey reads the 32-byte key at path, creating it (0600) if missing.
func fileKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) != 32 {
			return nil, fmt.Errorf("token store key %s: want 32 bytes, found %d", path, len(b))
		}
		return b, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	key := make([]byte, seal.KeySize)
	rand.Read(key)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fileKey(path) // another process made it first
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		return nil, err
	}
	return key, f.Close()
}

// storePurpose binds a store file's records to their use (internal/seal).
const storePurpose = "junction-oauth-v1"

// sealFile and openFile encrypt and decrypt the store's file under key.
func sealFile(key, plain []byte) ([]byte, error) {
	box, err := seal.New(key, storePurpose)
	if err != nil {
		return nil, err
	}
	return box.Seal(plain), nil
}

func openFile(key, sealed []byte) ([]byte, error) {
	box, err := seal.New(key, storePurpose)
	if err != nil {
		return nil, err
	}
	plain, err := box.Open(sealed)
	if err != nil {
		return nil, errors.New("cannot decrypt (the key changed, or the file is damaged)")
	}
	return plain, nil
}

// MemoryStore keeps entries in memory.
type MemoryStore struct {
	mu sync.Mutex
	m  map[string]*Entry
}

func (s *MemoryStore) Load(resource string) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[resource], nil
}

func (s *MemoryStore) Save(e *Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*Entry{}
	}
	c := *e
	s.m[e.Key()] = &c
	return nil
}

func (s *MemoryStore) Delete(resource string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[resource]
	delete(s.m, resource)
	return ok, nil
}

func (s *MemoryStore) List() ([]*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Entry
	for _, e := range s.m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}
