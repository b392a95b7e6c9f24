package reports

import (
	"embed"
	"fmt"
	"html/template"
	"io"
)

// The pages are html/template files drawing a view model the Go code
// computes (positions, labels, classes), so all escaping is the template's.
// Their CSS and scripts are embedded and inlined: each page is one
// self-contained file that opens from disk with no network.
var (
	//go:embed templates/*.html
	templateFS embed.FS
	//go:embed assets/timeline.css
	timelineCSS string
	//go:embed assets/suite.css
	suiteCSS string
	// onErrorJS records any page error on the root element, so a headless
	// check sees it.
	//go:embed assets/onerror.js
	onErrorJS string
	// renderedJS marks the suite page as rendered once its matrix and
	// strips are laid out.
	//go:embed assets/rendered.js
	renderedJS string
)

// pages holds the timeline and suite templates.
var pages = template.Must(template.New("pages").Funcs(template.FuncMap{
	"px0": func(f float64) string { return fmt.Sprintf("%.0f", f) },
	"px1": func(f float64) string { return fmt.Sprintf("%.1f", f) },
}).ParseFS(templateFS, "templates/*.html"))

// render executes the named page template with v.
func render(w io.Writer, name string, v any) error {
	return pages.ExecuteTemplate(w, name, v)
}
