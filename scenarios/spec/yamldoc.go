package spec

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// yamlDoc is a parsed spec file: its syntax tree, checked against the Go
// types it decodes into, and an index from dotted field paths (faults.0.kind)
// to the line each field sits on. Validation uses the index to name the line
// of any field, and to tell an omitted field from one written as zero.
type yamlDoc struct {
	file    string
	lines   map[string]int // dotted path → line of the key (or sequence item)
	anchors map[string]ast.Node
}

// decodeSpec reads b into out after checking, node by node, that every
// field exists in out's type and that every value has the field's type, so
// each mistake is reported with the field's dotted path and line rather than
// as a decoder message about Go types.
func decodeSpec(file string, b []byte, out any) (*yamlDoc, error) {
	d := &yamlDoc{file: file, lines: map[string]int{}, anchors: map[string]ast.Node{}}
	if err := checkText(file, b); err != nil {
		return nil, err
	}
	f, err := parser.ParseBytes(b, 0)
	if err != nil {
		return nil, d.libError(err, nil)
	}
	var docs []*ast.DocumentNode
	for _, doc := range f.Docs {
		if doc != nil && doc.Body != nil {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 {
		return nil, &SpecError{File: file, Msg: "empty file: a scenario needs at least name and duration"}
	}
	if len(docs) > 1 {
		line := 0
		if docs[1].Start != nil {
			line = docs[1].Start.Position.Line
		} else if tk := docs[1].Body.GetToken(); tk != nil {
			line = tk.Position.Line
		}
		return nil, &SpecError{File: file, Line: line, Msg: fmt.Sprintf("a second YAML document starts here: one scenario per file (found %d documents)", len(docs))}
	}
	body := docs[0].Body
	if n := d.resolve(body); n.Type() != ast.MappingType && n.Type() != ast.MappingValueType {
		return nil, &SpecError{File: file, Line: nodeLine(n), Msg: fmt.Sprintf("a scenario is a mapping of fields (name: ..., duration: ...), not %s", describeNode(n))}
	}
	d.lines[""] = nodeLine(d.resolve(body)) // a missing top-level field is reported at the top
	if err := d.check(body, reflect.TypeOf(out).Elem(), ""); err != nil {
		return nil, err
	}
	if err := yaml.NodeToValue(body, out, yaml.DisallowUnknownField()); err != nil {
		// The check above is meant to catch everything the decoder refuses;
		// this is the safety net, still with a line.
		return nil, d.libError(err, nil)
	}
	return d, nil
}

// checkText refuses what is not YAML text at all, before the parser turns
// it into a confusing message.
func checkText(file string, b []byte) error {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return &SpecError{File: file, Line: 1 + bytes.Count(b[:i], []byte("\n")), Msg: "binary file (NUL byte): a scenario is a YAML text file"}
	}
	if !utf8.Valid(b) {
		i := 0
		for i < len(b) {
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return &SpecError{File: file, Line: 1 + bytes.Count(b[:i], []byte("\n")), Msg: fmt.Sprintf("not UTF-8 text (byte 0x%02x at offset %d): a scenario is a YAML text file", b[i], i)}
	}
	return nil
}

var dupKey = regexp.MustCompile(`mapping key "(.*)" already defined at \[(\d+):\d+\]`)

// libError turns a go-yaml error into a SpecError with the line of its token.
func (d *yamlDoc) libError(err error, _ ast.Node) error {
	var ye yaml.Error
	if errors.As(err, &ye) {
		line := 0
		if tk := ye.GetToken(); tk != nil {
			line = tk.Position.Line
			// A plain scalar that runs on to the next lines (an indented
			// key under a value, say) is reported where it starts; the
			// mistake is on the line where it ends.
			if strings.Contains(ye.GetMessage(), "mapping value is not allowed") {
				line += strings.Count(strings.TrimRight(tk.Origin, " \t\r\n"), "\n")
			}
		}
		msg := ye.GetMessage()
		if m := dupKey.FindStringSubmatch(msg); m != nil {
			return &SpecError{File: d.file, Line: line, Field: m[1], Msg: fmt.Sprintf("written twice (first on line %s)", m[2])}
		}
		if strings.Contains(msg, "must be specified") {
			msg += " (is a [ or { left open above?)"
		}
		return &SpecError{File: d.file, Line: line, Msg: "YAML syntax: " + msg}
	}
	return &SpecError{File: d.file, Msg: "YAML: " + err.Error()}
}

// lineOf is the line of a dotted field path, or of the deepest part of it
// that the file contains (the parent mapping, for an omitted field).
func (d *yamlDoc) lineOf(field string) int {
	for p := field; ; {
		if l, ok := d.lines[p]; ok {
			return l
		}
		if p == "" {
			return 0
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			i = 0
		}
		p = p[:i]
	}
}

// has says whether the file writes the field (even as zero or null).
func (d *yamlDoc) has(field string) bool {
	_, ok := d.lines[field]
	return ok
}

func nodeLine(n ast.Node) int {
	if n == nil {
		return 0
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Position.Line
	}
	return 0
}

// resolve follows anchors, aliases and tags to the value node.
func (d *yamlDoc) resolve(n ast.Node) ast.Node {
	for i := 0; i < 100 && n != nil; i++ {
		switch v := n.(type) {
		case *ast.AnchorNode:
			if v.Name != nil {
				d.anchors[v.Name.GetToken().Value] = v.Value
			}
			n = v.Value
		case *ast.AliasNode:
			name := ""
			if v.Value != nil {
				name = v.Value.GetToken().Value
			}
			n = d.anchors[name]
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
	return n
}

// entries are the key/value pairs of a mapping node, merge keys expanded.
func (d *yamlDoc) entries(n ast.Node) []*ast.MappingValueNode {
	var out []*ast.MappingValueNode
	var vals []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		vals = m.Values
	case *ast.MappingValueNode:
		vals = []*ast.MappingValueNode{m}
	}
	for _, mv := range vals {
		if _, merge := mv.Key.(*ast.MergeKeyNode); merge {
			out = append(out, d.entries(d.resolve(mv.Value))...)
			continue
		}
		out = append(out, mv)
	}
	return out
}

var allDigits = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)

var (
	durationType = reflect.TypeOf(time.Duration(0))
	oneOfType    = reflect.TypeOf(OneOf(nil))
)

// describeNode names a node's kind as a user would.
func describeNode(n ast.Node) string {
	switch n.Type() {
	case ast.NullType:
		return "nothing"
	case ast.MappingType, ast.MappingValueType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	}
	return strconv.Quote(scalarText(n))
}

func scalarText(n ast.Node) string {
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return n.String()
}

// yamlField is one settable field of a struct type as YAML sees it.
type yamlField struct {
	name string
	typ  reflect.Type
}

// yamlFields lists t's fields by YAML key, inline structs flattened.
func yamlFields(t reflect.Type) []yamlField {
	var out []yamlField
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || (!sf.IsExported() && !sf.Anonymous) {
			continue
		}
		if strings.Contains(opts, "inline") {
			out = append(out, yamlFields(sf.Type)...)
			continue
		}
		if sf.Type.Kind() == reflect.Func {
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		out = append(out, yamlField{name, sf.Type})
	}
	return out
}

// node is one YAML node checked against a Go type: its document, the node
// and its field path; bad refuses it at the node's line, so the checks
// below carry no error closure.
type node struct {
	d    *yamlDoc
	n    ast.Node
	path string
}

// bad is the refusal of the node: the file, its line, its field path.
func (x node) bad(format string, args ...any) error {
	return &SpecError{File: x.d.file, Line: nodeLine(x.n), Field: x.path, Msg: fmt.Sprintf(format, args...)}
}

// check walks node n against Go type t at path.
func (d *yamlDoc) check(n ast.Node, t reflect.Type, path string) error {
	n = d.resolve(n)
	x := node{d, n, path}
	if n == nil {
		return x.bad("alias to an unknown anchor")
	}
	if t.Kind() == reflect.Pointer {
		if n.Type() == ast.NullType {
			return nil
		}
		t = t.Elem()
	}
	if n.Type() == ast.NullType {
		switch t.Kind() {
		case reflect.Struct, reflect.Slice, reflect.Map:
			return nil
		}
		return x.bad("no value (remove the line to use the default)")
	}
	switch {
	case t == oneOfType:
		return x.checkOneOf()
	case t == durationType:
		return x.checkDuration()
	}
	switch t.Kind() {
	case reflect.Struct:
		return x.checkStruct(t)
	case reflect.Slice:
		return x.checkSlice(t)
	case reflect.Map:
		return x.checkMap(t)
	}
	return x.checkScalar(t)
}

// checkOneOf accepts one scalar or a list of scalars (a rule's claim values).
func (x node) checkOneOf() error {
	d, n := x.d, x.n
	items := []ast.Node{n}
	if seq, ok := n.(*ast.SequenceNode); ok {
		items = seq.Values
	}
	for _, it := range items {
		switch d.resolve(it).Type() {
		case ast.StringType, ast.BoolType, ast.LiteralType:
		default:
			return x.bad("cannot use %s here: want a value or a list of values", describeNode(d.resolve(it)))
		}
	}
	return nil
}

// checkDuration wants a string Go parses as a duration; a bare number has no
// unit, so it is refused with the unit to add.
func (x node) checkDuration() error {
	n := x.n
	s, ok := n.(*ast.StringNode)
	if !ok {
		if n.Type() == ast.IntegerType || n.Type() == ast.FloatType {
			return x.bad("cannot use %s as a duration: give a unit (e.g. %ss or %sms)", scalarText(n), scalarText(n), scalarText(n))
		}
		return x.bad("cannot use %s as a duration (e.g. 500ms, 2s, 1m)", describeNode(n))
	}
	if _, err := time.ParseDuration(s.Value); err != nil {
		return x.bad("cannot use %q as a duration (e.g. 500ms, 2s, 1m)", s.Value)
	}
	return nil
}

// checkStruct walks a mapping's fields against the struct's YAML fields,
// recording each field's line; an unknown field is refused with a suggestion.
func (x node) checkStruct(t reflect.Type) error {
	d, n, path := x.d, x.n, x.path
	if n.Type() != ast.MappingType && n.Type() != ast.MappingValueType {
		return x.bad("cannot use %s here: want a mapping of fields", describeNode(n))
	}
	fields := yamlFields(t)
	for _, mv := range d.entries(n) {
		key := scalarText(d.resolve(mv.Key))
		p := join(path, key)
		var ft reflect.Type
		var names []string
		for _, f := range fields {
			names = append(names, f.name)
			if f.name == key {
				ft = f.typ
			}
		}
		d.lines[p] = nodeLine(mv.Key)
		if ft == nil {
			msg := "unknown field"
			if s := nearest(key, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			} else {
				msg += fmt.Sprintf(" (known: %s)", strings.Join(names, ", "))
			}
			return &SpecError{File: d.file, Line: nodeLine(mv.Key), Field: p, Msg: msg}
		}
		if err := d.check(mv.Value, ft, p); err != nil {
			return err
		}
	}
	return nil
}

// checkSlice walks a list's items against the element type.
func (x node) checkSlice(t reflect.Type) error {
	d, n, path := x.d, x.n, x.path
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return x.bad("cannot use %s here: want a list", describeNode(n))
	}
	for i, v := range seq.Values {
		p := join(path, strconv.Itoa(i))
		d.lines[p] = nodeLine(v)
		if err := d.check(v, t.Elem(), p); err != nil {
			return err
		}
	}
	return nil
}

// checkMap walks a mapping's keys and values against the map's types.
func (x node) checkMap(t reflect.Type) error {
	d, n, path := x.d, x.n, x.path
	if n.Type() != ast.MappingType && n.Type() != ast.MappingValueType {
		return x.bad("cannot use %s here: want a mapping", describeNode(n))
	}
	for _, mv := range d.entries(n) {
		k := d.resolve(mv.Key)
		p := join(path, scalarText(k))
		d.lines[p] = nodeLine(mv.Key)
		if err := d.check(k, t.Key(), p); err != nil {
			return err
		}
		if err := d.check(mv.Value, t.Elem(), p); err != nil {
			return err
		}
	}
	return nil
}

// checkScalar checks text, booleans, integers (in range for their Go type)
// and numbers.
func (x node) checkScalar(t reflect.Type) error {
	n := x.n
	switch t.Kind() {
	case reflect.String:
		switch n.Type() {
		case ast.StringType, ast.LiteralType:
			return nil
		}
		return x.bad("cannot use %s as text (quote it)", describeNode(n))
	case reflect.Bool:
		if n.Type() != ast.BoolType {
			return x.bad("cannot use %s as true or false", describeNode(n))
		}
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		in, ok := n.(*ast.IntegerNode)
		if !ok {
			if s, isStr := n.(*ast.StringNode); isStr && allDigits.MatchString(s.Value) {
				return x.bad("%s is out of range for an integer", s.Value)
			}
			return x.bad("cannot use %s as an integer", describeNode(n))
		}
		v := reflect.New(t).Elem()
		switch iv := in.Value.(type) {
		case int64:
			if v.CanInt() && !v.OverflowInt(iv) || v.CanUint() && iv >= 0 && !v.OverflowUint(uint64(iv)) {
				return nil
			}
		case uint64:
			if v.CanUint() && !v.OverflowUint(iv) || v.CanInt() && iv <= math.MaxInt64 && !v.OverflowInt(int64(iv)) {
				return nil
			}
		}
		return x.bad("%s is out of range for an integer", scalarText(n))
	case reflect.Float32, reflect.Float64:
		switch n.Type() {
		case ast.IntegerType, ast.FloatType:
			return nil
		}
		return x.bad("cannot use %s as a number", describeNode(n))
	}
	return x.bad("unsupported field type %s", t)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// YAML writes the spec back as YAML that Parse accepts: fields left at zero
// are omitted (an explicit zero count is refused on load), so a resolved
// spec saved in a run folder loads again as the same scenario.
func (s *Spec) YAML() ([]byte, error) {
	return yaml.MarshalWithOptions(s, yaml.OmitZero())
}
