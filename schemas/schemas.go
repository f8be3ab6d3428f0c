package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed *.schema.json
var files embed.FS

var (
	mu       sync.Mutex
	compiled = map[string]*jsonschema.Schema{}
)

// Names lists the embedded schemas, e.g. "journal-record".
func Names() []string {
	entries, _ := files.ReadDir(".")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name()[:len(e.Name())-len(".schema.json")])
	}
	return out
}

// Validate checks a JSON document against the named schema ("journal-record" for
// journal-record.schema.json).
func Validate(name string, doc []byte) error {
	s, err := schema(name)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("%s: not JSON: %w", name, err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// ValidateValue marshals v and validates it.
func ValidateValue(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return Validate(name, b)
}

func schema(name string) (*jsonschema.Schema, error) {
	mu.Lock()
	defer mu.Unlock()
	if s, ok := compiled[name]; ok {
		return s, nil
	}
	path := name + ".schema.json"
	raw, err := files.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no schema %q (have %v)", name, Names())
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", path, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(path, doc); err != nil {
		return nil, err
	}
	// A schema may refer to another's definitions ("result.schema.json#/$defs/..."):
	// every embedded schema is a resource of the compiler.
	for _, other := range Names() {
		if other == name {
			continue
		}
		b, _ := files.ReadFile(other + ".schema.json")
		d, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("schema %s.schema.json: %w", other, err)
		}
		if err := c.AddResource(other+".schema.json", d); err != nil {
			return nil, err
		}
	}
	s, err := c.Compile(path)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", path, err)
	}
	compiled[name] = s
	return s, nil
}
