package notebooks

import (
	"fmt"
	"strings"
	"testing"
)

// bigNotebook has n code cells with a few lines of source and outputs each.
func bigNotebook(n int) []byte {
	nb := New()
	for i := range n {
		c := NewCodeCell(fmt.Sprintf("x = %d\nfor i in range(x):\n    print(i)\nx", i))
		c.ExecutionCount = intPtr(i + 1)
		o := &Output{OutputType: ExecuteResult, Data: MimeBundle{}, Metadata: Metadata{}, ExecutionCount: intPtr(i + 1)}
		o.Data.SetText("text/plain", fmt.Sprint(i))
		o.Data.SetText("text/html", "<table>\n"+strings.Repeat("<tr><td>1</td></tr>\n", 10)+"</table>")
		c.Outputs = []*Output{{OutputType: Stream, Name: "stdout", Text: strings.Repeat("line\n", 20)}, o}
		nb.Cells = append(nb.Cells, c)
	}
	b, err := Marshal(nb)
	if err != nil {
		panic(err)
	}
	return b
}

func BenchmarkParse(b *testing.B) {
	data := bigNotebook(1000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshal(b *testing.B) {
	data := bigNotebook(1000)
	nb, err := Parse(data)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Marshal(nb); err != nil {
			b.Fatal(err)
		}
	}
}
