package store

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/internal/home"
)

// EnvDataDir names the environment variable that overrides the data directory.
const EnvDataDir = "AGENTKERNEL_DATA_DIR"

// FileName is the name of the database file inside the data directory.
const FileName = "agentkernel.db"

// Sync selects how hard a commit pushes data towards the disk.
type Sync int

const (
	// SyncNormal (the default) commits by writing the WAL to the operating
	// system: safe against any process crash, including SIGKILL. A power
	// failure may roll back the last few commits, never corrupt the file.
	SyncNormal Sync = iota
	// SyncFull also fsyncs the WAL on every commit: safe against power loss,
	// at the cost of one fsync per write.
	SyncFull
)

// pgSynchronousCommit is the PostgreSQL setting with the same guarantee:
// off returns once the commit is in the server's WAL buffers (the server
// writes them out within wal_writer_delay, 200 ms): safe against any crash
// of agentkernel, while a crash of the database server or its machine may
// lose the last fraction of a second of commits, never corrupt anything;
// on waits for the WAL to be flushed to disk.
func (s Sync) pgSynchronousCommit() string {
	if s == SyncFull {
		return "on"
	}
	return "off"
}

func (s Sync) pragma() string {
	if s == SyncFull {
		return "FULL"
	}
	return "NORMAL"
}

// Options configure Open. The zero value works: every field documents its
// default, which Open applies on a copy.
type Options struct {
	// Dir is the data directory holding agentkernel.db. Default: DataDir().
	// The directory is created (mode 0700) when missing.
	Dir string
	// Path, when set, is the database file itself and overrides Dir.
	Path string
	// URL, when a postgres:// or postgresql:// URL, selects the PostgreSQL
	// store instead of SQLite (Dir and Path are then unused; no file is
	// written). Default: $AGENTKERNEL_STORE. Any other value is an error.
	URL string
	// Sync is the commit durability. Default SyncNormal (see package doc).
	Sync Sync
	// BusyTimeout is how long a statement waits for a lock held by another
	// process before it fails with ErrLocked. Default 5s. On PostgreSQL it
	// is every connection's lock_timeout (unless the URL sets one), so no
	// other user's lock stalls a statement of ours for longer.
	BusyTimeout time.Duration
	// Debounce is the longest a streaming (partial) UI message update waits
	// before it is written. Default 500ms. Completed messages are never
	// debounced.
	Debounce time.Duration
	// Readers is the size of the read-only connection pool. Default 4.
	Readers int
	// Logger receives debug and error logs. Default: a null logger.
	Logger hclog.Logger
	// Now is the clock for session timestamps. Default time.Now.
	Now func() time.Time
	// OwnerName is the name listings show for the sessions this store
	// creates (their owner is Store.User). Default: DefaultOwnerName().
	OwnerName string
}

func (o Options) withDefaults() (Options, error) {
	if o.URL == "" {
		o.URL = os.Getenv(EnvStore)
	}
	if o.URL != "" && !IsPostgresURL(o.URL) {
		return o, fmt.Errorf("store: %q is not a postgres:// URL (unset %s for the SQLite store)", o.URL, EnvStore)
	}
	if o.Path == "" && o.URL == "" {
		if o.Dir == "" {
			d, err := DataDir()
			if err != nil {
				return o, err
			}
			o.Dir = d
		}
		o.Path = filepath.Join(o.Dir, FileName)
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.Debounce <= 0 {
		o.Debounce = 500 * time.Millisecond
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OwnerName == "" {
		o.OwnerName = DefaultOwnerName()
	}
	return o, nil
}

// DataDir resolves the data directory: $AGENTKERNEL_DATA_DIR when set (a
// kernelspec's env can name it), else $XDG_DATA_HOME/agentkernel, else
// ~/.local/share/agentkernel, where ~ is $HOME or, without it (a kernel
// started by a gateway), the account's home directory. It does not create
// the directory.
func DataDir() (string, error) {
	if d := os.Getenv(EnvDataDir); d != "" {
		return filepath.Abs(d)
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "agentkernel"), nil
	}
	h, err := home.Dir()
	if err != nil {
		return "", fmt.Errorf("store: resolve data directory: %w (set %s, e.g. in the kernelspec's env)", err, EnvDataDir)
	}
	return filepath.Join(h, ".local", "share", "agentkernel"), nil
}
