package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentkernel/agentkernel/messages"
	"github.com/agentkernel/agentkernel/rewind"
)

// pageHistory is n UI messages of every role, at ts 1000, 1010, …: a task,
// then turns of user feedback, an API request (meta), a command (tool) and
// its output (tool), an answer (assistant), and now and then a followup
// question (assistant) or an error (system).
func pageHistory(n int) []messages.UIMessage {
	var ui []messages.UIMessage
	for i := 0; len(ui) < n; i++ {
		ts := int64(1000 + 10*len(ui))
		var m messages.UIMessage
		switch {
		case i == 0:
			m = say(ts, messages.SayText, "the task")
		case i%7 == 1:
			m = say(ts, messages.SayUserFeedback, fmt.Sprintf("feedback %d", i))
		case i%7 == 2:
			m = say(ts, messages.SayAPIReqStarted, "{}")
		case i%7 == 3:
			m = ask(ts, messages.AskCommand, fmt.Sprintf("ls %d", i))
		case i%7 == 4:
			m = say(ts, messages.SayCommandOutput, fmt.Sprintf("output %d", i))
		case i%7 == 5:
			m = say(ts, messages.SayText, fmt.Sprintf("answer %d", i))
		case i%14 == 6:
			m = ask(ts, messages.AskFollowup, fmt.Sprintf("question %d", i))
		default:
			m = say(ts, messages.SayError, fmt.Sprintf("error %d", i))
		}
		ui = append(ui, m)
	}
	return ui
}

// withRole returns the messages of ui with role ("" = all), as the store
// classifies them.
func withRole(ui []messages.UIMessage, role string) []messages.UIMessage {
	var out []messages.UIMessage
	for i, m := range ui {
		if role == "" || string(messages.RoleOf(m, i == 0)) == role {
			out = append(out, m)
		}
	}
	return out
}

func lastN[T any](s []T, n int) []T {
	if n <= 0 || n >= len(s) {
		return s
	}
	return s[len(s)-n:]
}

func TestPageUI(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	id := newSession(t, s)
	other := newSession(t, s)
	ui := pageHistory(103)
	must(t, s.AppendUI(ctx, id, ui...))
	// Another session's messages interleave in the table and must not show.
	must(t, s.AppendUI(ctx, other, pageHistory(20)...))
	roles := []string{"", "user", "assistant", "tool", "system", "meta"}
	for _, role := range roles {
		if role != "" && len(withRole(ui, role)) < 3 {
			t.Fatalf("the fixture has %d %s messages", len(withRole(ui, role)), role)
		}
	}

	t.Run("last", func(t *testing.T) {
		for _, role := range roles {
			want := withRole(ui, role)
			for _, n := range []int{1, 2, 50, len(want) - 1, len(want), len(want) + 1, 10_000, 0, -1} {
				got, err := s.PageUI(ctx, id, UIPage{Last: n, Role: role})
				must(t, err)
				equalJSON(t, fmt.Sprintf("Last %d, role %q", n, role), got, lastN(want, n))
			}
		}
	})

	t.Run("before", func(t *testing.T) {
		for _, role := range roles {
			want := withRole(ui, role)
			for _, before := range []int64{1, 1000, 1001, 1005, 1010, 1500, 1505, ui[len(ui)-1].TS, ui[len(ui)-1].TS + 1, 1 << 62} {
				var older []messages.UIMessage
				for _, m := range want {
					if m.TS < before {
						older = append(older, m)
					}
				}
				for _, n := range []int{0, 1, 3, 1000} {
					got, err := s.PageUI(ctx, id, UIPage{Last: n, Before: before, Role: role})
					must(t, err)
					equalJSON(t, fmt.Sprintf("Last %d, Before %d, role %q", n, before, role), nonNilUI(got), nonNilUI(lastN(older, n)))
				}
			}
		}
	})

	t.Run("paging backwards", func(t *testing.T) {
		for _, role := range roles {
			want := withRole(ui, role)
			for _, size := range []int{1, 7, 50, 1000} {
				var got []messages.UIMessage
				var before int64
				pages := 0
				for {
					page, err := s.PageUI(ctx, id, UIPage{Last: size, Before: before, Role: role})
					must(t, err)
					if len(page) == 0 {
						break
					}
					if len(page) > size {
						t.Fatalf("page of %d messages, asked for %d", len(page), size)
					}
					// The places of the page's messages in the whole history.
					idx, err := s.UIIndexes(ctx, id, tsOf(page))
					must(t, err)
					for i, m := range page {
						if ui[idx[i]].TS != m.TS {
							t.Fatalf("role %q: message ts %d has index %d, which is ts %d", role, m.TS, idx[i], ui[idx[i]].TS)
						}
					}
					got = append(slices.Clone(page), got...)
					before = page[0].TS
					if pages++; pages > len(ui)+1 {
						t.Fatal("paging does not end")
					}
				}
				if wantPages := (len(want) + size - 1) / size; pages != wantPages {
					t.Errorf("role %q, pages of %d: %d pages, want %d", role, size, pages, wantPages)
				}
				equalJSON(t, fmt.Sprintf("role %q paged by %d", role, size), got, want)
			}
		}
	})

	t.Run("count", func(t *testing.T) {
		for _, role := range roles {
			n, err := s.CountUI(ctx, id, role)
			must(t, err)
			if want := len(withRole(ui, role)); n != want {
				t.Errorf("CountUI(%q) = %d, want %d", role, n, want)
			}
		}
	})

	t.Run("unknown session", func(t *testing.T) {
		const missing = "00000000-0000-4000-8000-00000000dead"
		_, err := s.PageUI(ctx, missing, UIPage{Last: 5})
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), missing) {
			t.Fatalf("PageUI of an unknown session: %v, want ErrNotFound naming it", err)
		}
		if _, err := s.CountUI(ctx, missing, "user"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("CountUI of an unknown session: %v", err)
		}
		if _, err := s.UIIndexes(ctx, missing, []int64{1000}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("UIIndexes of an unknown session: %v", err)
		}
	})

	t.Run("bad role", func(t *testing.T) {
		for _, role := range []string{"robot", "User", " user"} {
			_, err := s.PageUI(ctx, id, UIPage{Role: role})
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("unknown role %q", role)) ||
				!strings.Contains(err.Error(), "user, assistant, tool, system, meta") {
				t.Fatalf("PageUI with role %q: %v", role, err)
			}
			if _, err := s.CountUI(ctx, id, role); err == nil {
				t.Fatalf("CountUI with role %q succeeded", role)
			}
			if CheckRole(role) == nil {
				t.Fatalf("CheckRole(%q) = nil", role)
			}
		}
	})

	t.Run("indexes", func(t *testing.T) {
		idx, err := s.UIIndexes(ctx, id, []int64{1000, 1010, ui[50].TS, ui[50].TS, ui[len(ui)-1].TS})
		must(t, err)
		if want := []int{0, 1, 50, 50, len(ui) - 1}; !slices.Equal(idx, want) {
			t.Fatalf("UIIndexes = %v, want %v", idx, want)
		}
		if idx, err := s.UIIndexes(ctx, id, nil); err != nil || len(idx) != 0 {
			t.Fatalf("UIIndexes(nil) = %v, %v", idx, err)
		}
		for _, ts := range [][]int64{{1005}, {1000, 1005}, {1005, 1010}, {ui[len(ui)-1].TS + 10}, {1}} {
			if _, err := s.UIIndexes(ctx, id, ts); !errors.Is(err, ErrNotFound) {
				t.Fatalf("UIIndexes(%v) = %v, want ErrNotFound", ts, err)
			}
		}
		if _, err := s.UIIndexes(ctx, id, []int64{1010, 1000}); err == nil {
			t.Fatal("UIIndexes of timestamps out of order succeeded")
		}
	})
}

func tsOf(ms []messages.UIMessage) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.TS
	}
	return out
}

func nonNilUI(ms []messages.UIMessage) []messages.UIMessage {
	if ms == nil {
		return []messages.UIMessage{}
	}
	return ms
}

// TestPageUIAfterRewind: messages a rewind removed are in no page, count
// or index, and the messages appended after it are.
func TestPageUIAfterRewind(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	id := newSession(t, s)
	ui := pageHistory(60)
	must(t, s.AppendUI(ctx, id, ui...))
	cut := 43 // rewind to before ui[43], a user feedback
	if messages.RoleOf(ui[cut], false) != messages.RoleUser {
		t.Fatalf("ui[%d] is %s", cut, messages.RoleOf(ui[cut], false))
	}
	res, err := s.Rewind(ctx, id, ui[cut].TS, rewind.Options{})
	must(t, err)
	if len(res.UI) != cut {
		t.Fatalf("the rewind kept %d UI messages, want %d", len(res.UI), cut)
	}
	// New messages after the cut, at timestamps past the removed ones.
	added := []messages.UIMessage{say(5000, messages.SayUserFeedback, "again"), say(5010, messages.SayText, "redone")}
	must(t, s.AppendUI(ctx, id, added...))
	now := append(slices.Clone(ui[:cut]), added...)
	for _, role := range []string{"", "user", "assistant", "tool", "meta", "system"} {
		want := withRole(now, role)
		got, err := s.PageUI(ctx, id, UIPage{Role: role})
		must(t, err)
		equalJSON(t, "whole history, role "+role, nonNilUI(got), nonNilUI(want))
		got, err = s.PageUI(ctx, id, UIPage{Last: 5, Role: role})
		must(t, err)
		equalJSON(t, "last 5, role "+role, nonNilUI(got), nonNilUI(lastN(want, 5)))
		got, err = s.PageUI(ctx, id, UIPage{Last: 5, Before: 5000, Role: role})
		must(t, err)
		equalJSON(t, "last 5 before the new ones, role "+role, nonNilUI(got), nonNilUI(lastN(withRole(ui[:cut], role), 5)))
		n, err := s.CountUI(ctx, id, role)
		must(t, err)
		if n != len(want) {
			t.Errorf("CountUI(%q) after the rewind = %d, want %d", role, n, len(want))
		}
	}
	idx, err := s.UIIndexes(ctx, id, []int64{ui[cut-1].TS, 5000, 5010})
	must(t, err)
	if want := []int{cut - 1, cut, cut + 1}; !slices.Equal(idx, want) {
		t.Fatalf("UIIndexes after the rewind = %v, want %v", idx, want)
	}
	if _, err := s.UIIndexes(ctx, id, []int64{ui[cut].TS}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("UIIndexes of a rewound message: %v, want ErrNotFound", err)
	}
}

// TestPageUIUsesIndex: a page is read through an index in ts order, newest
// first, with no sort of the session's rows, on both engines.
func TestPageUIUsesIndex(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	id := newSession(t, s)
	must(t, s.AppendUI(ctx, id, pageHistory(200)...))
	for _, p := range []UIPage{{Last: 50}, {Last: 50, Before: 1500}, {Last: 50, Role: "user"}, {Last: 50, Before: 1500, Role: "tool"}, {}} {
		q, args := p.sql(1)
		var plan []string
		err := s.readTx(ctx, "explain", func(tx *sql.Tx) error {
			explain := "EXPLAIN QUERY PLAN "
			if s.pg {
				// The table is small: make the planner show what it does
				// with a large one.
				if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, "SET LOCAL enable_bitmapscan = off"); err != nil {
					return err
				}
				explain = "EXPLAIN "
			}
			rows, err := tx.QueryContext(ctx, explain+q, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					return err
				}
				plan = append(plan, fmt.Sprint(vals[len(vals)-1]))
			}
			return rows.Err()
		})
		must(t, err)
		text := strings.Join(plan, "\n")
		t.Logf("%+v:\n%s", p, text)
		want := "ui_session_ts"
		if p.Role != "" {
			want = "ui_session_role_ts"
		}
		bad := strings.Contains(text, "TEMP B-TREE") || strings.Contains(text, "Sort") || !strings.Contains(text, want)
		if s.pg {
			bad = bad || !strings.Contains(text, "Index Scan Backward")
		}
		if bad {
			t.Errorf("%+v: plan of %s\n%s\nwant a walk of %s, newest first, without a sort", p, q, text, want)
		}
	}
}

// TestPageIndexMigration: a database of the schema before the role index
// gets it when opened, and pages by role.
func TestPageIndexMigration(t *testing.T) {
	ctx := context.Background()
	_, upgrade := oldStore(t, 3)
	s, err := Open(ctx, upgrade(""))
	must(t, err)
	defer s.Close()
	id := newSession(t, s)
	ui := pageHistory(30)
	must(t, s.AppendUI(ctx, id, ui...))
	got, err := s.PageUI(ctx, id, UIPage{Last: 2, Role: "tool"})
	must(t, err)
	equalJSON(t, "last 2 tool messages", got, lastN(withRole(ui, "tool"), 2))
	var n int
	q := "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'ui_session_role_ts'"
	if s.pg {
		q = "SELECT count(*) FROM pg_indexes WHERE indexname = 'ui_session_role_ts' AND schemaname = current_schema()"
	}
	must(t, s.w.QueryRow(q).Scan(&n))
	if n != 1 {
		t.Fatalf("%d indexes ui_session_role_ts after the migration", n)
	}
}
