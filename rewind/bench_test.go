package rewind

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/agentkernel/agentkernel/messages"
)

var (
	bigOnce sync.Once
	bigUI   []messages.UIMessage
	bigAPI  []messages.APIMessage
)

// bigSession is a random session with 100,000 UI messages (and the API
// history that goes with it: turns, tools, condenses, truncations).
func bigSession() ([]messages.UIMessage, []messages.APIMessage) {
	bigOnce.Do(func() {
		s := newSim(rand.New(rand.NewPCG(42, 42)))
		s.contextEvery = 50 // one condense or truncation per ~500 steps
		for len(s.ui) < 100_000 {
			s.step()
		}
		bigUI, bigAPI = s.ui[:100_000], s.api
	})
	return bigUI, bigAPI
}

func BenchmarkRewind100k(b *testing.B) {
	ui, api := bigSession()
	b.Logf("%d UI messages, %d API messages", len(ui), len(api))
	for _, bc := range []struct {
		name string
		idx  int
	}{
		{"start", 1},
		{"middle", len(ui) / 2},
		{"last", len(ui) - 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ts := ui[bc.idx].TS
			for b.Loop() {
				if _, err := RewindToTimestamp(ui, api, ts, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEffective100k(b *testing.B) {
	_, api := bigSession()
	// Effective starts at the last summary; measure the worst case too, a
	// history without one.
	noSummary := make([]messages.APIMessage, 0, len(api))
	for _, m := range api {
		if !m.IsSummary {
			m.CondenseParent = ""
			noSummary = append(noSummary, m)
		}
	}
	b.Run("session", func(b *testing.B) {
		for b.Loop() {
			messages.Effective(api)
		}
	})
	b.Run("no-summary", func(b *testing.B) {
		for b.Loop() {
			messages.Effective(noSummary)
		}
	})
}
