package export

import (
	"reflect"
	"strings"

	"github.com/tenantguard/tenantguard/internal/registry"
)

// parametersSchema is the openAPIV3Schema of a unit's parameters, typed
// down to every field its rules read: the API server keeps what the schema
// declares and prunes the rest, so it declares exactly what the Constraint
// holds. Without declared reads, the registry is an object kept whole.
func (u *gatekeeperUnit) parametersSchema() map[string]any {
	stringList := arrayOf(map[string]any{"type": "string"})
	properties := map[string]any{
		"rules": withDescription(stringList, "the rule ids this Constraint enforces, all in its enforcementAction"),
	}
	out := map[string]any{"type": "object", "properties": properties}
	reads, ok := u.reads()
	if !ok {
		properties["registry"] = map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true, "description": "the compiled tenant registry"}
		properties["managers"] = withDescription(stringList, "user names of tenantguard itself")
		return out
	}
	tenant := objectOf(map[string]any{"name": map[string]any{"type": "string"}})
	reg := objectOf(map[string]any{
		"settings":      objectOf(map[string]any{"tenantLabel": map[string]any{"type": "string"}}),
		"tenants":       withDescription(mapOf(tenant), "per tenant, by name, the registry fields the rules read"),
		"defaultTenant": withDescription(tenant, "the fields the rules read, for a namespace labelled with a tenant the registry does not have"),
	})
	reg["description"] = "the parts of the compiled tenant registry the rules read"
	for _, read := range reads {
		if read == "runtime.managers" {
			properties["managers"] = withDescription(stringList, "user names of tenantguard itself")
			continue
		}
		path, ok := strings.CutPrefix(read, "registry.")
		if !ok {
			continue
		}
		segments := strings.Split(path, ".")
		switch segments[0] {
		case "tenants":
			addSchemaPath(tenant, reflect.TypeFor[registry.Tenant](), segments[1:])
		case "settings":
			addSchemaPath(reg["properties"].(map[string]any)["settings"].(map[string]any), reflect.TypeFor[registry.Settings](), segments[1:])
		default:
			if s, ok := registryDerived[segments[0]]; ok && len(segments) == 1 {
				reg["properties"].(map[string]any)[segments[0]] = s
			} else {
				reg["properties"].(map[string]any)[segments[0]] = map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
			}
		}
	}
	properties["registry"] = reg
	return out
}

// registryDerived are the schemas of the compiled registry's indexes,
// which no registry type declares.
var registryDerived = func() map[string]any {
	flags := mapOf(map[string]any{"type": "boolean"})
	tenants := mapOf(arrayOf(map[string]any{"type": "string"}))
	return map[string]any{
		"administrators":           withDescription(objectOf(map[string]any{"users": flags, "groups": flags}), "administrators by user name and group"),
		"owners":                   withDescription(objectOf(map[string]any{"users": tenants, "groups": tenants}), "the tenants each user and group owns"),
		"serviceAccountNamespaces": withDescription(tenants, "namespaces holding ServiceAccount owners, with their tenants"),
		"cordonExempt":             withDescription(objectOf(map[string]any{"users": flags, "groups": flags}), "requesters a cordon lets through, by user name and group"),
		"administratorNamespaces":  withDescription(flags, "namespaces holding ServiceAccount administrators or cordon-exempt requesters"),
	}
}()

// addSchemaPath adds to an object schema the property at path of a Go
// type, typed from its JSON shape.
func addSchemaPath(schema map[string]any, t reflect.Type, path []string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if len(path) == 0 || t.Kind() != reflect.Struct {
		return
	}
	field, ok := jsonField(t, path[0])
	props := schema["properties"].(map[string]any)
	if !ok {
		props[path[0]] = map[string]any{"x-kubernetes-preserve-unknown-fields": true}
		return
	}
	if len(path) == 1 || field.Type.Kind() == reflect.Map {
		// a map's keys are data, not fields: it takes its whole schema
		// (a tenant's extensions, read by key)
		props[path[0]] = typeSchema(field.Type)
		return
	}
	child, ok := props[path[0]].(map[string]any)
	if !ok || child["properties"] == nil {
		child = objectOf(map[string]any{})
		props[path[0]] = child
	}
	addSchemaPath(child, field.Type, path[1:])
}

// jsonField is the field of a struct that JSON names name.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// typeSchema is the structural schema of a Go type's JSON form; a
// pointer, slice or map may be null.
func typeSchema(t reflect.Type) map[string]any {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		out := nonNullSchema(t)
		out["nullable"] = true
		return out
	}
	return nonNullSchema(t)
}

func nonNullSchema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return arrayOf(typeSchema(t.Elem()))
	case reflect.Map:
		return mapOf(typeSchema(t.Elem()))
	case reflect.Struct:
		props := map[string]any{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			props[name] = typeSchema(f.Type)
		}
		return objectOf(props)
	}
	return map[string]any{"x-kubernetes-preserve-unknown-fields": true}
}

func objectOf(properties map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": properties}
}

func mapOf(values map[string]any) map[string]any {
	return map[string]any{"type": "object", "additionalProperties": values}
}

func arrayOf(items map[string]any) map[string]any {
	return map[string]any{"type": "array", "items": items}
}

func withDescription(schema map[string]any, description string) map[string]any {
	out := make(map[string]any, len(schema)+1)
	for k, v := range schema {
		out[k] = v
	}
	out["description"] = description
	return out
}
