// Command terraform-provider-aws is a schema-only stand-in for the AWS
// provider, so that `tofu init`, `tofu validate` and `tofu test` (with
// `mock_provider "aws"`) run on a machine that cannot download the real one.
//
// It serves the schema in schema.json (written by ./schemagen from the AWS
// provider's CDK bindings on npm) for the resource types infra/terraform
// uses, and nothing else: it validates nothing beyond the schema, plans a
// resource as configured, and refuses to apply or to read a data source.
// Tests never reach it for plans: mock_provider answers those.
//
// Its own go.mod keeps terraform-plugin-go, gRPC and protobuf out of strata's.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tfprotov5/tf5server"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

//go:embed schema.json
var schemaJSON []byte

type schemaFile struct {
	Source    string            `json:"source"`
	Resources map[string]*block `json:"resources"`
}

type block struct {
	Attributes map[string]*attribute   `json:"attributes"`
	Blocks     map[string]*nestedBlock `json:"blocks"`
}

type attribute struct {
	Type     string `json:"type"`
	Required bool   `json:"required"`
	Optional bool   `json:"optional"`
	Computed bool   `json:"computed"`
}

type nestedBlock struct {
	Nesting string `json:"nesting"`
	Block   *block `json:"block"`
}

func main() {
	var f schemaFile
	if err := json.Unmarshal(schemaJSON, &f); err != nil {
		log.Fatalf("stand-in: schema.json: %v", err)
	}
	resources := map[string]*tfprotov5.Schema{}
	for name, b := range f.Resources {
		pb, err := protoBlock(b)
		if err != nil {
			log.Fatalf("stand-in: %s: %v", name, err)
		}
		resources[name] = &tfprotov5.Schema{Block: pb}
	}
	s := &server{resources: resources}
	if err := tf5server.Serve("registry.opentofu.org/hashicorp/aws", func() tfprotov5.ProviderServer { return s }); err != nil {
		log.Fatal(err)
	}
}

func ctyType(t string) (tftypes.Type, error) {
	switch t {
	case "string":
		return tftypes.String, nil
	case "number":
		return tftypes.Number, nil
	case "bool":
		return tftypes.Bool, nil
	}
	open := strings.IndexByte(t, '(')
	if open < 0 || !strings.HasSuffix(t, ")") {
		return nil, fmt.Errorf("type %q", t)
	}
	elem, err := ctyType(t[open+1 : len(t)-1])
	if err != nil {
		return nil, err
	}
	switch t[:open] {
	case "list":
		return tftypes.List{ElementType: elem}, nil
	case "set":
		return tftypes.Set{ElementType: elem}, nil
	case "map":
		return tftypes.Map{ElementType: elem}, nil
	}
	return nil, fmt.Errorf("type %q", t)
}

// protoBlock converts a block in a stable order (tofu compares schemas).
func protoBlock(b *block) (*tfprotov5.SchemaBlock, error) {
	out := &tfprotov5.SchemaBlock{}
	names := make([]string, 0, len(b.Attributes))
	for n := range b.Attributes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := b.Attributes[n]
		t, err := ctyType(a.Type)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out.Attributes = append(out.Attributes, &tfprotov5.SchemaAttribute{
			Name: n, Type: t, Required: a.Required, Optional: a.Optional, Computed: a.Computed,
		})
	}
	names = names[:0]
	for n := range b.Blocks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		nb := b.Blocks[n]
		inner, err := protoBlock(nb.Block)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		mode := map[string]tfprotov5.SchemaNestedBlockNestingMode{
			"list":   tfprotov5.SchemaNestedBlockNestingModeList,
			"set":    tfprotov5.SchemaNestedBlockNestingModeSet,
			"single": tfprotov5.SchemaNestedBlockNestingModeSingle,
		}[nb.Nesting]
		out.BlockTypes = append(out.BlockTypes, &tfprotov5.SchemaNestedBlock{TypeName: n, Nesting: mode, Block: inner})
	}
	return out, nil
}

// server answers with the schema and otherwise as little as it can.
type server struct {
	resources map[string]*tfprotov5.Schema
}

func providerSchema() *tfprotov5.Schema {
	return &tfprotov5.Schema{Block: &tfprotov5.SchemaBlock{Attributes: []*tfprotov5.SchemaAttribute{
		{Name: "region", Type: tftypes.String, Optional: true},
	}}}
}

func errorDiag(what string) []*tfprotov5.Diagnostic {
	return []*tfprotov5.Diagnostic{{
		Severity: tfprotov5.DiagnosticSeverityError,
		Summary:  "stand-in AWS provider: " + what + " is not supported",
		Detail:   "This provider only serves the AWS provider's schema, for offline checks; use mock_provider in tofu test.",
	}}
}

func (s *server) GetMetadata(context.Context, *tfprotov5.GetMetadataRequest) (*tfprotov5.GetMetadataResponse, error) {
	r := &tfprotov5.GetMetadataResponse{ServerCapabilities: &tfprotov5.ServerCapabilities{GetProviderSchemaOptional: false}}
	for name := range s.resources {
		r.Resources = append(r.Resources, tfprotov5.ResourceMetadata{TypeName: name})
	}
	return r, nil
}

func (s *server) GetProviderSchema(context.Context, *tfprotov5.GetProviderSchemaRequest) (*tfprotov5.GetProviderSchemaResponse, error) {
	return &tfprotov5.GetProviderSchemaResponse{
		Provider:          providerSchema(),
		ResourceSchemas:   s.resources,
		DataSourceSchemas: map[string]*tfprotov5.Schema{},
	}, nil
}

func (s *server) PrepareProviderConfig(_ context.Context, req *tfprotov5.PrepareProviderConfigRequest) (*tfprotov5.PrepareProviderConfigResponse, error) {
	return &tfprotov5.PrepareProviderConfigResponse{PreparedConfig: req.Config}, nil
}

func (s *server) ConfigureProvider(context.Context, *tfprotov5.ConfigureProviderRequest) (*tfprotov5.ConfigureProviderResponse, error) {
	return &tfprotov5.ConfigureProviderResponse{}, nil
}

func (s *server) StopProvider(context.Context, *tfprotov5.StopProviderRequest) (*tfprotov5.StopProviderResponse, error) {
	return &tfprotov5.StopProviderResponse{}, nil
}

func (s *server) ValidateResourceTypeConfig(context.Context, *tfprotov5.ValidateResourceTypeConfigRequest) (*tfprotov5.ValidateResourceTypeConfigResponse, error) {
	return &tfprotov5.ValidateResourceTypeConfigResponse{}, nil
}

func (s *server) UpgradeResourceState(_ context.Context, req *tfprotov5.UpgradeResourceStateRequest) (*tfprotov5.UpgradeResourceStateResponse, error) {
	schema, ok := s.resources[req.TypeName]
	if !ok || req.RawState == nil {
		return &tfprotov5.UpgradeResourceStateResponse{Diagnostics: errorDiag("state of " + req.TypeName)}, nil
	}
	typ := schema.ValueType()
	v, err := req.RawState.UnmarshalWithOpts(typ, tfprotov5.UnmarshalOpts{ValueFromJSONOpts: tftypes.ValueFromJSONOpts{IgnoreUndefinedAttributes: true}})
	if err != nil {
		return &tfprotov5.UpgradeResourceStateResponse{Diagnostics: errorDiag("state of " + req.TypeName + ": " + err.Error())}, nil
	}
	dv, err := tfprotov5.NewDynamicValue(typ, v)
	if err != nil {
		return nil, err
	}
	return &tfprotov5.UpgradeResourceStateResponse{UpgradedState: &dv}, nil
}

func (s *server) ReadResource(_ context.Context, req *tfprotov5.ReadResourceRequest) (*tfprotov5.ReadResourceResponse, error) {
	return &tfprotov5.ReadResourceResponse{NewState: req.CurrentState, Private: req.Private}, nil
}

func (s *server) PlanResourceChange(_ context.Context, req *tfprotov5.PlanResourceChangeRequest) (*tfprotov5.PlanResourceChangeResponse, error) {
	return &tfprotov5.PlanResourceChangeResponse{PlannedState: req.ProposedNewState, PlannedPrivate: req.PriorPrivate}, nil
}

func (s *server) ApplyResourceChange(_ context.Context, req *tfprotov5.ApplyResourceChangeRequest) (*tfprotov5.ApplyResourceChangeResponse, error) {
	return &tfprotov5.ApplyResourceChangeResponse{Diagnostics: errorDiag("apply of " + req.TypeName)}, nil
}

func (s *server) ImportResourceState(_ context.Context, req *tfprotov5.ImportResourceStateRequest) (*tfprotov5.ImportResourceStateResponse, error) {
	return &tfprotov5.ImportResourceStateResponse{Diagnostics: errorDiag("import of " + req.TypeName)}, nil
}

func (s *server) MoveResourceState(_ context.Context, req *tfprotov5.MoveResourceStateRequest) (*tfprotov5.MoveResourceStateResponse, error) {
	return &tfprotov5.MoveResourceStateResponse{Diagnostics: errorDiag("moving state to " + req.TargetTypeName)}, nil
}

func (s *server) ValidateDataSourceConfig(context.Context, *tfprotov5.ValidateDataSourceConfigRequest) (*tfprotov5.ValidateDataSourceConfigResponse, error) {
	return &tfprotov5.ValidateDataSourceConfigResponse{}, nil
}

func (s *server) ReadDataSource(_ context.Context, req *tfprotov5.ReadDataSourceRequest) (*tfprotov5.ReadDataSourceResponse, error) {
	return &tfprotov5.ReadDataSourceResponse{Diagnostics: errorDiag("data source " + req.TypeName)}, nil
}

func (s *server) CallFunction(_ context.Context, req *tfprotov5.CallFunctionRequest) (*tfprotov5.CallFunctionResponse, error) {
	return &tfprotov5.CallFunctionResponse{Error: &tfprotov5.FunctionError{Text: "stand-in AWS provider: no functions"}}, nil
}

func (s *server) GetFunctions(context.Context, *tfprotov5.GetFunctionsRequest) (*tfprotov5.GetFunctionsResponse, error) {
	return &tfprotov5.GetFunctionsResponse{}, nil
}

func (s *server) ValidateEphemeralResourceConfig(context.Context, *tfprotov5.ValidateEphemeralResourceConfigRequest) (*tfprotov5.ValidateEphemeralResourceConfigResponse, error) {
	return &tfprotov5.ValidateEphemeralResourceConfigResponse{}, nil
}

func (s *server) OpenEphemeralResource(_ context.Context, req *tfprotov5.OpenEphemeralResourceRequest) (*tfprotov5.OpenEphemeralResourceResponse, error) {
	return &tfprotov5.OpenEphemeralResourceResponse{Diagnostics: errorDiag("ephemeral resource " + req.TypeName)}, nil
}

func (s *server) RenewEphemeralResource(context.Context, *tfprotov5.RenewEphemeralResourceRequest) (*tfprotov5.RenewEphemeralResourceResponse, error) {
	return &tfprotov5.RenewEphemeralResourceResponse{}, nil
}

func (s *server) CloseEphemeralResource(context.Context, *tfprotov5.CloseEphemeralResourceRequest) (*tfprotov5.CloseEphemeralResourceResponse, error) {
	return &tfprotov5.CloseEphemeralResourceResponse{}, nil
}
