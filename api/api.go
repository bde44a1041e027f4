// Package api holds the Worker's HTTP contract as an OpenAPI 3.1 document,
// api/openapi.yaml. Its validator for tests is package apitest, kept apart
// so that nothing the Worker imports can reach it.
package api

import (
	"bytes"
	_ "embed"
)

//go:embed openapi.yaml
var document []byte

// Document returns the OpenAPI document, as YAML.
func Document() []byte { return bytes.Clone(document) }
