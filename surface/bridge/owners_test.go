package bridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/internal/pgtest"
	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/session"
	"github.com/agentkernel/agentkernel/store"
)

// TestMagicsSeeOnlyYourSessions: a kernel of Alice's on a shared
// PostgreSQL store lists none of Bob's sessions (%agent sessions --all)
// and cannot resume one; shared with her, it lists it as Bob's, and
// %agent resume continues it in a fork of her own.
func TestMagicsSeeOnlyYourSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ipykernel and PostgreSQL")
	}
	srv, err := pgtest.Start()
	if errors.Is(err, pgtest.ErrUnavailable) && os.Getenv(pgtest.EnvRequire) == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	admin, err := srv.NewSchema(ctx, "magics")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Init(ctx, store.InitOptions{AdminURL: admin}); err != nil {
		t.Fatal(err)
	}
	role := func(name string) string {
		if _, err := srv.EnsureRole(ctx, name, store.UserRole); err != nil {
			t.Fatal(err)
		}
		return pgtest.WithUser(admin, name)
	}
	bob, err := store.Open(ctx, store.Options{URL: role("ak_bob")})
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	bs, err := bob.CreateSession(ctx, store.NewSession{DisplayName: "Bob's zanzibar plan"})
	if err != nil {
		t.Fatal(err)
	}
	if err := bob.AppendUI(ctx, bs.ID, messages.UIMessage{TS: 1, Type: messages.TypeSay, Say: messages.SayText, Text: "zanzibar"}); err != nil {
		t.Fatal(err)
	}

	h := startWith(t, testConfig{Dir: t.TempDir(), Host: session.Config{StoreURL: role("ak_alice")}})
	magic := func(line string) (string, map[string]any) {
		t.Helper()
		rep, o := h.cell(line)
		return stdout(o) + fmt.Sprint(rep["evalue"]), rep
	}
	if out, _ := magic("%agent sessions --all"); strings.Contains(out, bs.ID[:8]) || strings.Contains(out, "zanzibar") {
		t.Fatalf("alice's kernel lists bob's session:\n%s", out)
	}
	if out, rep := magic("%agent resume " + bs.ID); rep["status"] != "error" || !strings.Contains(out, "no such session") {
		t.Fatalf("alice's kernel resumes bob's session: %v\n%s", rep, out)
	}

	if err := bob.Share(ctx, bs.ID, "ak_alice"); err != nil {
		t.Fatal(err)
	}
	if out, _ := magic("%agent sessions --all"); !strings.Contains(out, bs.ID[:8]) || !strings.Contains(out, "ak_bob") {
		t.Fatalf("alice's kernel, after the share:\n%s", out)
	}
	if out, _ := magic("%agent sessions"); strings.Contains(out, bs.ID[:8]) {
		t.Fatalf("alice's own sessions hold bob's:\n%s", out)
	}
	out, rep := magic("%agent resume " + bs.ID[:8])
	if rep["status"] != "ok" || !strings.Contains(out, "your own fork") {
		t.Fatalf("resume a shared session: %v\n%s", rep, out)
	}
	cur, err := h.b.host.Current(ctx)
	if err != nil || cur.ID == bs.ID || cur.ForkOf != bs.ID || cur.Messages != 1 {
		t.Fatalf("the kernel's session: %+v, %v", cur, err)
	}
}
