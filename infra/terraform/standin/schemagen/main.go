// Command schemagen writes the stand-in AWS provider's schema.json from the
// CDK bindings of the AWS provider published on npm (@cdktn/provider-aws),
// for the resource types named on the command line only.
//
// The bindings do not ship the provider's schema as JSON, but each resource's
// lib/<type>/index.js carries it in a regular shape, which this reads:
//
//   - synthesizeHclAttributes() (the resource) and <struct>ToHclTerraform()
//     (each nested block) list every argument with its type and whether it is
//     a block: `name: { value: …, isBlock: false, type: "simple",
//     storageClassType: "string" }`;
//   - a comment above each getter gives the provider's own flags:
//     `// bucket - computed: false, optional: false, required: true`; where
//     one is missing, an argument with a setter and no reset method is
//     required, one with a reset method optional;
//   - a getter `get x() { return this.getStringAttribute('x'); }` with no
//     setter is a computed attribute (arn, dns_name, …).
//
// Usage:
//
//	npm pack @cdktn/provider-aws@25.7.0 && tar xzf cdktn-provider-aws-25.7.0.tgz
//	go run ./schemagen -lib package/lib -o schema.json aws_instance aws_lb ...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Schema is schema.json: resource type to its block.
type Schema struct {
	Source    string            `json:"source"`
	Resources map[string]*Block `json:"resources"`
}

// Block is a resource's or a nested block's attributes and blocks.
type Block struct {
	Attributes map[string]*Attribute   `json:"attributes,omitempty"`
	Blocks     map[string]*NestedBlock `json:"blocks,omitempty"`
}

// Attribute is one attribute: Type is string, number, bool, list(string),
// set(string), map(string) and so on.
type Attribute struct {
	Type     string `json:"type"`
	Required bool   `json:"required,omitempty"`
	Optional bool   `json:"optional,omitempty"`
	Computed bool   `json:"computed,omitempty"`
}

// NestedBlock is a nested block: Nesting is list, set or single.
type NestedBlock struct {
	Nesting string `json:"nesting"`
	Block   *Block `json:"block"`
}

func main() {
	lib := flag.String("lib", "package/lib", "the npm package's lib directory")
	out := flag.String("o", "schema.json", "file to write")
	source := flag.String("source", "@cdktn/provider-aws", "package and version, recorded in the file")
	flag.Parse()
	s := Schema{Source: *source, Resources: map[string]*Block{}}
	for _, typ := range flag.Args() {
		dir := strings.ReplaceAll(strings.TrimPrefix(typ, "aws_"), "_", "-")
		src, err := os.ReadFile(filepath.Join(*lib, dir, "index.js"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "schemagen:", err)
			os.Exit(1)
		}
		b, err := resourceBlock(string(src), typ)
		if err != nil {
			fmt.Fprintln(os.Stderr, "schemagen:", typ+":", err)
			os.Exit(1)
		}
		s.Resources[typ] = b
	}
	data, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, append(data, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

var (
	classRE   = regexp.MustCompile(`(?m)^class (\w+) extends cdktn\.(\w+) \{`)
	hclAttrRE = regexp.MustCompile(`(?m)^\s+(\w+): \{\n\s+value: [^\n]*\n\s+isBlock: (true|false),\n\s+type: "(\w+)",\n\s+storageClassType: "(\w+)",`)
	getAttrRE = regexp.MustCompile(`(?m)^    get (\w+)\(\) \{\n\s+return this\.get(\w+)Attribute\('([^']+)'\);`)
	setRE     = regexp.MustCompile(`(?m)^    set (\w+)\(`)
	resetRE   = regexp.MustCompile(`(?m)^    reset(\w+)\(`)
	flagsRE   = regexp.MustCompile(`(?m)^\s+// (\w+) - computed: (true|false), optional: (true|false), required: (true|false)$`)
)

// classes splits the file into class bodies by name.
func classes(src string) map[string]string {
	out := map[string]string{}
	locs := classRE.FindAllStringSubmatchIndex(src, -1)
	for i, l := range locs {
		end := len(src)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		out[src[l[2]:l[3]]] = src[l[0]:end]
	}
	return out
}

// members is what a class says of its arguments, by camelCase name.
type members struct {
	settable, resettable map[string]bool
	computed             map[string]string  // tf name -> getter kind, for getters without setter
	flags                map[string][3]bool // tf name -> computed, optional, required, from the comments
}

func classMembers(body string) members {
	m := members{settable: map[string]bool{}, resettable: map[string]bool{}, computed: map[string]string{}, flags: map[string][3]bool{}}
	for _, f := range flagsRE.FindAllStringSubmatch(body, -1) {
		m.flags[f[1]] = [3]bool{f[2] == "true", f[3] == "true", f[4] == "true"}
	}
	for _, s := range setRE.FindAllStringSubmatch(body, -1) {
		m.settable[s[1]] = true
	}
	for _, s := range resetRE.FindAllStringSubmatch(body, -1) {
		m.resettable[strings.ToLower(s[1][:1])+s[1][1:]] = true
	}
	for _, g := range getAttrRE.FindAllStringSubmatch(body, -1) {
		if !m.settable[g[1]] {
			m.computed[g[3]] = g[2]
		}
	}
	return m
}

func camel(tf string) string {
	parts := strings.Split(tf, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func resourceBlock(src, typ string) (*Block, error) {
	cls := classes(src)
	var resBody string
	for _, body := range cls {
		if strings.Contains(body, `static tfResourceType = "`+typ+`"`) {
			resBody = body
		}
	}
	if resBody == "" {
		return nil, fmt.Errorf("no class with tfResourceType %q", typ)
	}
	i := strings.Index(resBody, "synthesizeHclAttributes() {")
	if i < 0 {
		return nil, fmt.Errorf("no synthesizeHclAttributes")
	}
	return block(src, cls, resBody[i:], classMembers(resBody), 0)
}

func block(src string, cls map[string]string, hcl string, m members, depth int) (*Block, error) {
	if depth > 6 {
		return nil, fmt.Errorf("nesting deeper than 6")
	}
	b := &Block{Attributes: map[string]*Attribute{}, Blocks: map[string]*NestedBlock{}}
	if end := strings.Index(hcl, "// remove undefined attributes"); end >= 0 {
		hcl = hcl[:end]
	}
	for _, a := range hclAttrRE.FindAllStringSubmatch(hcl, -1) {
		name, isBlock, kind, storage := a[1], a[2] == "true", a[3], a[4]
		if name == "timeouts" {
			continue // the provider's own operation timeouts: not used here
		}
		if isBlock {
			structName := strings.TrimSuffix(storage, "List")
			fn := strings.ToLower(structName[:1]) + structName[1:] + "ToHclTerraform(struct) {"
			fi := strings.Index(src, "function "+fn)
			if fi < 0 {
				return nil, fmt.Errorf("block %s: no function %s", name, fn)
			}
			body := src[fi:]
			if e := strings.Index(body, "\n}\n"); e >= 0 {
				body = body[:e]
			}
			inner, err := block(src, cls, body, classMembers(cls[structName+"OutputReference"]), depth+1)
			if err != nil {
				return nil, err
			}
			nesting := map[string]string{"list": "list", "set": "set", "struct": "single"}[kind]
			if nesting == "" {
				return nil, fmt.Errorf("block %s: nesting %q", name, kind)
			}
			b.Blocks[name] = &NestedBlock{Nesting: nesting, Block: inner}
			continue
		}
		t, err := attrType(kind, storage)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", name, err)
		}
		attr := &Attribute{Type: t}
		if m.resettable[camel(name)] || name == "id" {
			attr.Optional = true
		} else {
			attr.Required = true
		}
		if name == "id" {
			attr.Computed = true
		}
		if f, ok := m.flags[name]; ok {
			attr.Computed, attr.Optional, attr.Required = f[0], f[1], f[2]
		}
		b.Attributes[name] = attr
	}
	for name, getter := range m.computed {
		if _, ok := b.Attributes[name]; ok {
			continue
		}
		if _, ok := b.Blocks[name]; ok {
			continue
		}
		t := map[string]string{"String": "string", "Number": "number", "Boolean": "bool", "List": "list(string)",
			"NumberList": "list(number)", "StringMap": "map(string)", "NumberMap": "map(number)", "BooleanMap": "map(bool)"}[getter]
		if t == "" {
			continue
		}
		b.Attributes[name] = &Attribute{Type: t, Computed: true}
	}
	if len(b.Attributes) == 0 {
		b.Attributes = nil
	}
	if len(b.Blocks) == 0 {
		b.Blocks = nil
	}
	return b, nil
}

func attrType(kind, storage string) (string, error) {
	elem := map[string]string{"string": "string", "number": "number", "boolean": "bool"}
	switch {
	case kind == "simple" && elem[storage] != "":
		return elem[storage], nil
	case (kind == "list" || kind == "set") && strings.HasSuffix(storage, "List") && elem[strings.TrimSuffix(storage, "List")] != "":
		return kind + "(" + elem[strings.TrimSuffix(storage, "List")] + ")", nil
	case kind == "map" && strings.HasSuffix(storage, "Map") && elem[strings.TrimSuffix(storage, "Map")] != "":
		return "map(" + elem[strings.TrimSuffix(storage, "Map")] + ")", nil
	}
	known := []string{kind, storage}
	sort.Strings(known)
	return "", fmt.Errorf("unknown type %v", known)
}
