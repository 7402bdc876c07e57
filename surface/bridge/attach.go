package bridge

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentkernel/agentkernel/agent"
)

// attachment is an image %agent attach queued for the next prompt.
type attachment struct {
	name  string
	image agent.Image
}

// attachMagic runs %agent attach: with files, it reads each as an image
// and queues it for the next prompt (all or none: a bad file queues
// nothing); "clear" drops the queue; with nothing, it lists the queue.
func (b *Bridge) attachMagic(args []string) (string, error) {
	b.attachMu.Lock()
	defer b.attachMu.Unlock()
	switch {
	case len(args) == 0:
		if len(b.attached) == 0 {
			return "No images attached. %agent attach FILE … sends images with your next prompt.", nil
		}
		return "Attached for your next prompt:\n" + b.listAttachedLocked(), nil
	case len(args) == 1 && args[0] == "clear":
		n := len(b.attached)
		b.attached = nil
		return fmt.Sprintf("Dropped %d attached image%s.", n, plural(n)), nil
	}
	if len(b.attached)+len(args) > agent.MaxAttachedImages {
		return "", fmt.Errorf("at most %d images go with one prompt (%d attached already)", agent.MaxAttachedImages, len(b.attached))
	}
	var add []attachment
	for _, name := range args {
		im, err := readImage(b.host.Workspace(), name)
		if err != nil {
			return "", err
		}
		add = append(add, attachment{name: name, image: im})
	}
	b.attached = append(b.attached, add...)
	return "Attached for your next prompt:\n" + b.listAttachedLocked(), nil
}

func (b *Bridge) listAttachedLocked() string {
	lines := make([]string, len(b.attached))
	for i, a := range b.attached {
		lines[i] = "  " + a.name + " " + a.image.Summary()
	}
	return strings.Join(lines, "\n")
}

// takeAttached returns the queued images and empties the queue.
func (b *Bridge) takeAttached() []agent.Image {
	b.attachMu.Lock()
	defer b.attachMu.Unlock()
	var ims []agent.Image
	for _, a := range b.attached {
		ims = append(ims, a.image)
	}
	b.attached = nil
	return ims
}

// readImage reads the image file name (relative to dir unless absolute).
// The person at the notebook names it, so it may lie outside the
// workspace; it must be an image the models take, of at most
// agent.MaxAttachedImageBytes.
func readImage(dir, name string) (agent.Image, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return agent.Image{}, fmt.Errorf("attach %s: %w", name, err)
	}
	if fi.IsDir() {
		return agent.Image{}, fmt.Errorf("attach %s: a directory, not an image", name)
	}
	if fi.Size() > agent.MaxAttachedImageBytes {
		return agent.Image{}, fmt.Errorf("attach %s: %d bytes, over the limit of %d: scale it down first", name, fi.Size(), agent.MaxAttachedImageBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return agent.Image{}, fmt.Errorf("attach %s: %w", name, err)
	}
	im, err := agent.ImageFromBytes(http.DetectContentType(data), data)
	if err != nil {
		return agent.Image{}, fmt.Errorf("attach %s: %w", name, err)
	}
	return im, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
