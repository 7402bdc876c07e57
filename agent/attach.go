package agent

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // image.DecodeConfig of attached GIFs
	_ "image/jpeg" // and JPEGs
	_ "image/png"  // and PNGs
	"strings"

	"github.com/agentkernel/agentkernel/messages"
)

// Prompt is one message of the user's: its text, and the images attached
// to it (the web panel's paste and file picker).
type Prompt struct {
	Text   string
	Images []Image
}

// Limits on the images attached to one prompt or answer. A larger image is
// refused with a message; the web panel scales pictures down to fit first.
const (
	MaxAttachedImages     = 4
	MaxAttachedImageBytes = maxShownImageBytes
)

// ErrBadImage is wrapped by the errors of ImageFromDataURL.
var ErrBadImage = errors.New("agent: bad attached image")

// ImageFromDataURL reads an attached image given as a data: URL
// ("data:image/png;base64,…"). Only PNG, JPEG, GIF and WebP are taken, the
// data must be that kind of image, and at most MaxAttachedImageBytes.
func ImageFromDataURL(u string) (Image, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return Image{}, fmt.Errorf("%w: not a data: URL", ErrBadImage)
	}
	head, data, ok := strings.Cut(rest, ",")
	if !ok {
		return Image{}, fmt.Errorf("%w: a data: URL without data", ErrBadImage)
	}
	mime, ok := strings.CutSuffix(head, ";base64")
	if !ok {
		return Image{}, fmt.Errorf("%w: the data must be base64", ErrBadImage)
	}
	if base64.StdEncoding.DecodedLen(len(data)) > MaxAttachedImageBytes+2 {
		return Image{}, fmt.Errorf("%w: larger than %s", ErrBadImage, humanBytes(MaxAttachedImageBytes))
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return Image{}, fmt.Errorf("%w: the base64 data is broken: %v", ErrBadImage, err)
	}
	return checkImage(mime, raw, data)
}

// ImageFromBytes reads an attached image given as its bytes (a file's),
// of the media type mime, with the checks of ImageFromDataURL.
func ImageFromBytes(mime string, raw []byte) (Image, error) {
	return checkImage(mime, raw, "")
}

// checkImage checks that raw is an image of type mime that the models
// take, within MaxAttachedImageBytes, and describes it. data is raw in
// base64 when the caller has it ("": made here, once raw passed).
func checkImage(mime string, raw []byte, data string) (Image, error) {
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		return Image{}, fmt.Errorf("%w: %q is not an image type the models take (PNG, JPEG, GIF or WebP)", ErrBadImage, truncateRunes(mime, 40))
	}
	if len(raw) > MaxAttachedImageBytes {
		return Image{}, fmt.Errorf("%w: %s, larger than %s", ErrBadImage, humanBytes(len(raw)), humanBytes(MaxAttachedImageBytes))
	}
	if data == "" {
		data = base64.StdEncoding.EncodeToString(raw)
	}
	im := Image{MIME: mime, Bytes: len(raw), Data: data}
	if mime == "image/webp" {
		// The standard library has no WebP decoder: check the RIFF header.
		if len(raw) < 12 || string(raw[:4]) != "RIFF" || string(raw[8:12]) != "WEBP" {
			return Image{}, fmt.Errorf("%w: the data is not a WebP image", ErrBadImage)
		}
		return im, nil
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil || "image/"+format != mime {
		return Image{}, fmt.Errorf("%w: the data is not a %s image", ErrBadImage, strings.ToUpper(strings.TrimPrefix(mime, "image/")))
	}
	im.Width, im.Height = cfg.Width, cfg.Height
	return im, nil
}

// attached is how the user's images go to the model: image blocks for a
// vision model; for any other, a note that names them, so the model knows
// they were there and can say it does not see them.
func (t *Task) attached(ims []Image) (blocks []messages.ContentBlock, note string) {
	if len(ims) == 0 {
		return nil, ""
	}
	if t.vision() {
		return imageBlocks(ims), ""
	}
	names := make([]string, len(ims))
	for i, im := range ims {
		names[i] = im.Summary()
	}
	return nil, fmt.Sprintf("(The user attached %d image%s", len(ims), plural(len(ims))) + " that this model cannot be shown: " + strings.Join(names, ", ") + ".)"
}

// showImages sets a UI message's images to ims as data: URLs; nil when
// there are none to show.
func showImages(ims []Image) func(*messages.UIMessage) {
	var urls []string
	for _, im := range ims {
		if u := im.DataURL(); u != "" {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil
	}
	return func(m *messages.UIMessage) { m.Images = urls }
}

// vision reports whether the task's model takes images.
func (t *Task) vision() bool {
	p := t.Provider()
	return p != nil && p.Model().Vision
}

// imageBlocks are ims as image content blocks.
func imageBlocks(ims []Image) []messages.ContentBlock {
	blocks := make([]messages.ContentBlock, len(ims))
	for i, im := range ims {
		blocks[i] = messages.ContentBlock{Type: messages.BlockImage,
			Source: &messages.ImageSource{Type: "base64", MediaType: im.MIME, Data: im.Data}}
	}
	return blocks
}
