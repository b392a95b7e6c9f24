package reports

import (
	"fmt"
	"strings"

	"github.com/lockstorm/lockstorm/checker"
)

// writeFindings lists the run's findings under the timeline's title, those
// the expectation does not permit first and marked so, each with when it
// first happened and its witness.
func writeFindings(b *strings.Builder, res checker.Result) {
	if len(res.Findings) == 0 {
		return
	}
	b.WriteString("<ul class=\"findings\" id=\"findings\">\n")
	for _, permitted := range []bool{false, true} {
		for _, f := range res.Findings {
			if f.Permitted != permitted {
				continue
			}
			mark := `<b class="v-unsafe">not permitted</b>`
			if permitted {
				mark = "permitted"
			}
			at := ""
			if f.FirstNs >= 0 {
				at = " from " + ms(f.FirstNs)
			}
			fmt.Fprintf(b, "<li>%s ×%d%s (%s: %s): %s</li>\n", esc(string(f.Kind)), f.Count, at, mark, esc(f.Why), esc(f.Witness))
		}
	}
	b.WriteString("</ul>\n")
}
