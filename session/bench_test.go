package session

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/store"
)

// BenchmarkRewindWorld10k is the conversation plus files rewind of a
// 10,000-message session: each iteration rewinds the last turn (a prompt,
// an answer, and the file the turn changed), the store write and the file
// restore included. It reports the p50 in ms.
func BenchmarkRewindWorld10k(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(context.Background(), store.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ws := b.TempDir()
	s, err := st.CreateSession(ctx, store.NewSession{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	const turns = 5000 // two messages each
	var ui []messages.UIMessage
	var api []messages.APIMessage
	var changes []store.FileChange
	last := map[string]string{}
	ts := int64(1_000_000)
	for k := 0; k < turns; k++ {
		user := messages.UIMessage{TS: ts, Type: messages.TypeSay, Say: messages.SayUserFeedback, Text: fmt.Sprintf("question %d", k)}
		if k == 0 {
			user.Say = messages.SayText
		}
		answer := messages.UIMessage{TS: ts + 2, Type: messages.TypeSay, Say: messages.SayText, Text: fmt.Sprintf("answer %d", k)}
		ui = append(ui, user, answer)
		api = append(api,
			messages.APIMessage{Role: messages.RoleUser, TS: ts, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: user.Text}}},
			messages.APIMessage{Role: messages.RoleAssistant, TS: ts + 2, Content: []messages.ContentBlock{{Type: messages.BlockText, Text: answer.Text}}})
		path := fmt.Sprintf("f%d.txt", k%10)
		after, err := st.PutBlob(ctx, []byte(fmt.Sprintf("version %d", k)))
		if err != nil {
			b.Fatal(err)
		}
		changes = append(changes, store.FileChange{Anchor: ts + 1, Path: path, Before: last[path], After: after})
		last[path] = after
		ts += 10
	}
	for i := 0; i < len(ui); i += 2000 {
		if err := st.AppendUI(ctx, s.ID, ui[i:min(i+2000, len(ui))]...); err != nil {
			b.Fatal(err)
		}
		if err := st.AppendAPI(ctx, s.ID, api[i:min(i+2000, len(api))]...); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.AddFileChanges(ctx, s.ID, changes); err != nil {
		b.Fatal(err)
	}
	for k := turns - 10; k < turns; k++ {
		path := filepath.Join(ws, fmt.Sprintf("f%d.txt", k%10))
		if err := os.WriteFile(path, []byte(fmt.Sprintf("version %d", k)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	h := New(Config{Store: st, Workspace: ws})
	defer h.Close()
	if _, err := h.Resume(ctx, s.ID); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var durs []time.Duration
	for i := 0; i < b.N && i < turns-1; i++ {
		hist := h.Conversation().UI()
		target := hist[len(hist)-2].TS // the last prompt
		t0 := time.Now()
		rw, err := h.World().Rewind(ctx, target, RewindOptions{})
		durs = append(durs, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		if rw.Files == nil || len(rw.Files.Restored)+len(rw.Files.Removed) != 1 {
			b.Fatalf("iteration %d: files %+v", i, rw.Files)
		}
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkKernelRestore is a rewind's kernel restore with the real
// ipykernel: restart, then replay five cells that took 0.2 s each. It
// reports the restore (restart and replay) beside the kernel's start-up and
// the cells' own run time: the aim is restore ≤ start-up + 1.1 × original.
func BenchmarkKernelRestore(b *testing.B) {
	if err := exec.Command("/usr/bin/python3", "-c", "import ipykernel").Run(); err != nil {
		b.Skip("Debian's python3-ipykernel is not installed")
	}
	b.Setenv("JUPYTER_RUNTIME_DIR", b.TempDir())
	ctx := context.Background()
	r := backing.NewLocal(backing.LocalOptions{})
	defer r.Close()
	t0 := time.Now()
	if err := r.Ready(ctx); err != nil {
		b.Fatal(err)
	}
	startup := time.Since(t0)
	var code []CodeRun
	original := time.Duration(0)
	for i := 0; i < 5; i++ {
		c := fmt.Sprintf("import time; time.sleep(0.2); v%d = %d", i, i)
		t0 := time.Now()
		if _, err := r.Execute(ctx, backing.Exec{Code: c}); err != nil {
			b.Fatal(err)
		}
		original += time.Since(t0)
		code = append(code, CodeRun{Code: c, Origin: "agent"})
	}
	st, err := store.Open(context.Background(), store.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	h := New(Config{Store: st, Runner: r, Workspace: b.TempDir()})
	defer h.Close()
	if _, err := h.Current(ctx); err != nil {
		b.Fatal(err)
	}
	h.mu.Lock()
	c := h.cur
	h.mu.Unlock()
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		lines, err := h.world.replay(ctx, c, code)
		total += time.Since(t0)
		if err != nil || len(lines) != len(code) {
			b.Fatalf("replay: %v %v", lines, err)
		}
	}
	b.ReportMetric(startup.Seconds()*1000, "startup-ms")
	b.ReportMetric(original.Seconds()*1000, "original-ms")
	b.ReportMetric(total.Seconds()*1000/float64(b.N), "restore-ms")
}
