package bridge

import "context"

// runMagic runs the %agent subcommand sub with args as a cell would,
// without the cell: what it prints, or why it failed.
func (b *Bridge) runMagic(ctx context.Context, sub string, args []string) (string, error) {
	m, ok := lookupMagic(sub)
	if !ok {
		panic("no magic " + sub)
	}
	return m.run(b, ctx, magicCall{name: sub, args: args})
}
