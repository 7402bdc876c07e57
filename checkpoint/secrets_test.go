package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentkernel/agentkernel/store"
)

// keptBlobs is a blob store that remembers every content it was given.
type keptBlobs struct {
	*store.Store
	mu   sync.Mutex
	kept [][]byte
}

func (b *keptBlobs) PutBlob(ctx context.Context, data []byte) (string, error) {
	b.mu.Lock()
	b.kept = append(b.kept, bytes.Clone(data))
	b.mu.Unlock()
	return b.Store.PutBlob(ctx, data)
}

func (b *keptBlobs) PutBlobs(ctx context.Context, data [][]byte) ([]string, error) {
	for _, d := range data {
		b.mu.Lock()
		b.kept = append(b.kept, bytes.Clone(d))
		b.mu.Unlock()
	}
	return b.Store.PutBlobs(ctx, data)
}

func (b *keptBlobs) holding(secret string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range b.kept {
		if bytes.Contains(d, []byte(secret)) {
			return true
		}
	}
	return false
}

// TestSecretsNeverKept: protected files (.env, keys, .mcp.json), a private
// key under a name that says nothing, and what the user's Ignore names are
// never kept — not by the baseline, not by a scan after a step changed
// them, not by Track, not by a restore's look at the current content. Their
// changes are recorded by stat (Withheld), and Restore leaves them alone
// and says so, while it restores the other files of the same step.
func TestSecretsNeverKept(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	secrets := map[string]string{
		".env":               "OPENAI_API_KEY=sk-trackertest-0123456789\n",
		"id_ed25519":         "-----BEGIN OPENSSH PRIVATE KEY-----\ntrackertest-ssh\n-----END OPENSSH PRIVATE KEY-----\n",
		"deploy/robot":       "-----BEGIN RSA PRIVATE KEY-----\ntrackertest-rsa\n-----END RSA PRIVATE KEY-----\n",
		".mcp.json":          `{"mcpServers":{"gh":{"command":"gh-mcp","env":{"GITHUB_TOKEN":"ghp_trackertest0123"}}}}`,
		"private/notes.txt":  "trackertest-ignored-by-the-user\n",
		"app/config/.env.db": "DB_PASSWORD=trackertest-db\n",
	}
	for p, c := range secrets {
		write(t, root, p, c)
	}
	write(t, root, "main.py", "x = 1\n")
	blobs := &keptBlobs{Store: openStore(t)}
	tr, err := New(root, blobs, Options{Ignore: []string{"private/"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Baseline(ctx, false); err != nil {
		t.Fatal(err)
	}
	// A step changes every file (as code in the kernel would).
	for p, c := range secrets {
		write(t, root, p, c+"# rotated trackertest-2\n")
	}
	write(t, root, "main.py", "x = 2\n")
	write(t, root, "fresh.key", "trackertest-fresh\n")
	ch := scan(t, tr)
	got := paths(ch)
	sort.Strings(got)
	want := []string{"changed .env", "changed .mcp.json", "changed app/config/.env.db", "changed deploy/robot",
		"changed id_ed25519", "changed main.py", "created fresh.key"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	for _, c := range ch {
		if c.Path != "main.py" && (c.After != Withheld || c.Before != "" && c.Before != Withheld) {
			t.Errorf("change of %s recorded as %q → %q, want withheld", c.Path, c.Before, c.After)
		}
	}
	// A file tool's write to an ignored file, and Track of a protected one.
	write(t, root, "private/notes.txt", "trackertest-tracked\n")
	if _, err := tr.Track(ctx, "private/notes.txt", ".env"); err != nil {
		t.Fatal(err)
	}
	rep, err := tr.Restore(ctx, ch, true) // forced: the current content is looked at
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(rep.Protected)
	wantProt := []string{".env", ".mcp.json", "app/config/.env.db", "deploy/robot", "fresh.key", "id_ed25519"}
	if !reflect.DeepEqual(rep.Protected, wantProt) || !reflect.DeepEqual(rep.Restored, []string{"main.py"}) {
		t.Fatalf("restore report %+v, want protected %v and main.py restored", rep, wantProt)
	}
	if s, _ := read(t, root, ".env"); !strings.Contains(s, "trackertest-2") {
		t.Errorf(".env was changed by the restore: %q", s)
	}
	if s, _ := read(t, root, "main.py"); s != "x = 1\n" {
		t.Errorf("main.py = %q", s)
	}
	for _, s := range []string{"trackertest"} {
		if blobs.holding(s) {
			t.Errorf("the blob store was given a secret (%q)", s)
		}
	}
}

// TestBaselineLeavesGOMAXPROCS: the tracker never sets GOMAXPROCS (the
// process owns it: two trackers' baselines at once used to leave it
// wrong); a background baseline borrows a processor through
// Options.Processor and gives it back.
func TestBaselineLeavesGOMAXPROCS(t *testing.T) {
	root := t.TempDir()
	for i := range 50 {
		write(t, root, fmt.Sprintf("d%d/f.txt", i%5), "x")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // as a kernel runs
	before := runtime.GOMAXPROCS(0)
	var lent, returned atomic.Int32
	var trackers []*Tracker
	for range 2 {
		tr, err := New(root, openStore(t), Options{Processor: func() func() {
			lent.Add(1)
			return func() { returned.Add(1) }
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		trackers = append(trackers, tr)
	}
	var wg sync.WaitGroup
	for _, tr := range trackers {
		wg.Go(func() {
			if _, err := tr.Baseline(context.Background(), true); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d after the baselines, was %d", got, before)
	}
	if lent.Load() != 2 || returned.Load() != 2 {
		t.Errorf("processors lent %d, returned %d: want 2 and 2", lent.Load(), returned.Load())
	}
}
