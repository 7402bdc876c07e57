package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentkernel/agentkernel/internal/protect"
)

// errKeep marks a failure of the blob store (not of the file).
var errKeep = errors.New("checkpoint: keep content")

// racyWindow is how close to the moment a file is read its last write may
// be for a later write to leave its stat unchanged: file times come from a
// coarse clock (a scheduler tick, at most 10 ms), and may lag.
const racyWindow = 50 * time.Millisecond

// load stats and reads the file rel into buf, returning its entry (its
// hash Withheld when it may hold secrets, Unkept when it is over the
// limits, or when unkept, else still to be set) and its content (buf's,
// valid until its next use). The stat is taken on the open file before and
// after the read: a file that changed meanwhile is marked racy, to be read
// again by the next scan.
func (t *Tracker) load(rel string, st fileStat, unkept bool, buf *bytes.Buffer) (entry, []byte, error) {
	if t.withheld(rel) {
		return entry{fileStat: st, hash: Withheld}, nil, nil
	}
	if unkept || st.size > t.opts.MaxFileSize {
		return entry{fileStat: st, hash: Unkept}, nil, nil
	}
	f, err := os.Open(filepath.Join(t.root, filepath.FromSlash(rel)))
	if err != nil {
		return entry{}, nil, err
	}
	defer f.Close()
	now := time.Now().Add(-racyWindow).UnixNano()
	before, err := fstat(f)
	if err != nil {
		return entry{}, nil, err
	}
	if before.size > t.opts.MaxFileSize {
		return entry{fileStat: before, hash: Unkept}, nil, nil
	}
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(f, t.opts.MaxFileSize+1)); err != nil {
		return entry{}, nil, err
	}
	after, err := fstat(f)
	if err != nil {
		return entry{}, nil, err
	}
	if int64(buf.Len()) > t.opts.MaxFileSize {
		return entry{fileStat: after, hash: Unkept}, nil, nil
	}
	racy := after != before || after.mtime >= now || after.ctime >= now
	if protect.Content(buf.Bytes()) != "" {
		return entry{fileStat: after, racy: racy, hash: Withheld}, nil, nil
	}
	return entry{fileStat: after, racy: racy}, buf.Bytes(), nil
}

// read loads the file rel and keeps its content: its entry.
func (t *Tracker) read(ctx context.Context, rel string, st fileStat, unkept bool, buf *bytes.Buffer) (entry, error) {
	e, data, err := t.load(rel, st, unkept, buf)
	if err != nil || e.hash != "" {
		return e, err
	}
	defer shrink(buf)
	if e.hash, err = t.blobs.PutBlob(ctx, data); err != nil {
		return entry{}, fmt.Errorf("%w %s: %w", errKeep, rel, err)
	}
	return e, nil
}

// keep stores contents, in one transaction where the store can.
func (t *Tracker) keep(ctx context.Context, data [][]byte) ([]string, error) {
	if b, ok := t.blobs.(BatchBlobs); ok {
		return b.PutBlobs(ctx, data)
	}
	hashes := make([]string, len(data))
	for i, d := range data {
		h, err := t.blobs.PutBlob(ctx, d)
		if err != nil {
			return nil, err
		}
		hashes[i] = h
	}
	return hashes, nil
}

// shrink lets a buffer that held a big file go.
func shrink(buf *bytes.Buffer) {
	if buf.Cap() > 1<<20 {
		*buf = bytes.Buffer{}
	}
}

func (e entry) indexEntry(rel string) IndexEntry {
	ie := IndexEntry{Path: rel, Size: e.size, MTime: e.mtime, CTime: e.ctime, Inode: e.ino, Hash: e.hash}
	if e.racy {
		ie.Size = -1
	}
	return ie
}

// batcher keeps the contents of files read in batches: one transaction
// per 256 files or 4 MiB. done gets each file's entry, hash set.
type batcher struct {
	t     *Tracker
	done  func(rel string, e entry) error
	items []batched
	size  int
}

type batched struct {
	rel  string
	e    entry
	data []byte
}

// add queues a file read (data is copied: the read buffer is reused).
func (b *batcher) add(ctx context.Context, rel string, e entry, data []byte) error {
	b.items = append(b.items, batched{rel: rel, e: e, data: bytes.Clone(data)})
	b.size += len(data)
	if b.size >= 4<<20 || len(b.items) >= 256 {
		return b.flush(ctx)
	}
	return nil
}

func (b *batcher) flush(ctx context.Context) error {
	if len(b.items) == 0 {
		return nil
	}
	data := make([][]byte, len(b.items))
	for i, it := range b.items {
		data[i] = it.data
	}
	hashes, err := b.t.keep(ctx, data)
	if err != nil {
		return fmt.Errorf("%w: %w", errKeep, err)
	}
	items := b.items
	b.items, b.size = nil, 0
	for i, it := range items {
		it.e.hash = hashes[i]
		if err := b.done(it.rel, it.e); err != nil {
			return err
		}
	}
	return nil
}
