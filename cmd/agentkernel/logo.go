package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
)

// logos draws the kernelspec logos: a rounded indigo square with a white
// chevron prompt ("›_"), at 32 and 64 pixels.
func logos() map[string][]byte {
	out := map[string][]byte{}
	for _, n := range []int{32, 64} {
		out[pngName(n)] = drawLogo(n)
	}
	return out
}

func pngName(n int) string {
	if n == 32 {
		return "logo-32x32.png"
	}
	return "logo-64x64.png"
}

func drawLogo(n int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, n, n))
	bg := color.NRGBA{R: 0x4f, G: 0x46, B: 0xe5, A: 0xff}
	fg := color.NRGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}
	r := n / 6
	f := float64(n)
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			if inRounded(x, y, n, r) {
				img.Set(x, y, bg)
			}
			fx, fy := float64(x)/f, float64(y)/f
			// chevron: two strokes meeting at (0.45, 0.5)
			w := 0.06
			if fx >= 0.22 && fx <= 0.47 && (abs(fy-(0.25+(fx-0.22)))) < w ||
				fx >= 0.22 && fx <= 0.47 && (abs(fy-(0.75-(fx-0.22)))) < w {
				img.Set(x, y, fg)
			}
			// underscore
			if fx >= 0.52 && fx <= 0.8 && fy >= 0.68 && fy <= 0.78 {
				img.Set(x, y, fg)
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // encoding an in-memory image cannot fail
	}
	return buf.Bytes()
}

func inRounded(x, y, n, r int) bool {
	cx, cy := x, y
	switch {
	case x < r && y < r:
		cx, cy = r, r
	case x >= n-r && y < r:
		cx, cy = n-r-1, r
	case x < r && y >= n-r:
		cx, cy = r, n-r-1
	case x >= n-r && y >= n-r:
		cx, cy = n-r-1, n-r-1
	default:
		return true
	}
	dx, dy := x-cx, y-cy
	return dx*dx+dy*dy <= r*r
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
