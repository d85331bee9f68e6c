package tests

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The image copies what `make build` produces; these tests check that binary
// and the Dockerfile's promises (no Docker engine runs here to build it).

func TestTheBuiltBinaryIsStatic(t *testing.T) {
	bin := filepath.Join("..", "bin", "tenantguard")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("%v: run `make build` first (make test does)", err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("bin/tenantguard has a dynamic loader; distroless static cannot run it (CGO must be off)")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Fatalf("bin/tenantguard links %v (%v); it must be static", libs, err)
	}
	out, err := exec.CommandContext(t.Context(), bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tenantguard") {
		t.Fatalf("bin/tenantguard version: %v %s", err, out)
	}
}

func TestDockerfileShipsThatBinaryAsNonRoot(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var stages [][]string
	for line := range strings.SplitSeq(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "FROM ") {
			stages = append(stages, nil)
		}
		if len(stages) > 0 {
			stages[len(stages)-1] = append(stages[len(stages)-1], line)
		}
	}
	if len(stages) != 2 {
		t.Fatalf("%d stages, want a build stage and a runtime stage", len(stages))
	}
	build, final := strings.Join(stages[0], "\n"), stages[1]
	for _, want := range []string{"AS build", "RUN make build"} {
		if !strings.Contains(build, want) {
			t.Errorf("the build stage lacks %q", want)
		}
	}
	wantFinal := []string{
		"FROM gcr.io/distroless/static-debian12:nonroot",
		"COPY --from=build /src/bin/tenantguard /tenantguard",
		"USER 65532:65532",
		"EXPOSE 9443",
		`ENTRYPOINT ["/tenantguard"]`,
		`CMD ["serve"]`,
	}
	if strings.Join(final, "\n") != strings.Join(wantFinal, "\n") {
		t.Errorf("runtime stage:\n%s\nwant:\n%s", strings.Join(final, "\n"), strings.Join(wantFinal, "\n"))
	}
	makefile, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(makefile, []byte("CGO_ENABLED=0 go build -buildvcs=auto -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/tenantguard ./cmd/tenantguard")) {
		t.Error("make build no longer builds bin/tenantguard with CGO off; the Dockerfile copies that path")
	}
}
