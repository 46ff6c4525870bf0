package scrapetest

import (
	_ "embed"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/dcgm-4gpu-2pods.txt from testdata/dcgm-l4-1gpu.txt")

// dcgmL4Recorded is the verbatim dcgm-exporter recording the four-GPU text
// is made from (testdata/README.md).
//
//go:embed testdata/dcgm-l4-1gpu.txt
var dcgmL4Recorded string

// The recorded GPU's identity, and what each GPU of the four-GPU node gets
// instead. GPU 0 keeps the recorded UUID and PCI bus id; the others are
// invented, in the same format.
const (
	recordedUUID = "GPU-c2f76b33-7953-256e-8f33-1343419b1a1c"
	recordedBus  = "00000000:31:00.0"
)

var fourGPUs = [4]struct{ uuid, bus, pod string }{
	{recordedUUID, recordedBus, "trainer-a-0"},
	{"GPU-5b3e0a97-1d42-8c6f-27e9-b84f0d5c3a16", "00000000:33:00.0", "trainer-a-0"},
	{"GPU-9e71c4d8-06ab-3f25-d1c7-4a2e8b960f3d", "00000000:35:00.0", "trainer-b-0"},
	{"GPU-3a0fd6e2-c95b-7148-6e0a-f1d27c84b59e", "00000000:37:00.0", "trainer-b-0"},
}

// fourGPUText extends the one-GPU recording as testdata/README.md says:
// every family keeps its HELP and TYPE lines and gets one line per GPU,
// gpu/UUID/pci_bus_id/device set for that GPU, the recorded value kept,
// and dcgm-exporter's Kubernetes attributes appended after the recorded
// labels in the order it writes them (sorted by name).
func fourGPUText(recorded string) (string, error) {
	var b strings.Builder
	for n, line := range strings.Split(strings.TrimSuffix(recorded, "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			b.WriteString(line + "\n")
			continue
		}
		for i, g := range fourGPUs {
			out := line
			for _, r := range [][2]string{
				{`{gpu="0",`, fmt.Sprintf(`{gpu="%d",`, i)},
				{`,UUID="` + recordedUUID + `",`, `,UUID="` + g.uuid + `",`},
				{`,pci_bus_id="` + recordedBus + `",`, `,pci_bus_id="` + g.bus + `",`},
				{`,device="nvidia0",`, fmt.Sprintf(`,device="nvidia%d",`, i)},
				{`"} `, `",container="trainer",namespace="rl",pod="` + g.pod + `",pod_uid=""} `},
			} {
				if strings.Count(out, r[0]) != 1 {
					return "", fmt.Errorf("line %d: want %q once in %q", n+1, r[0], line)
				}
				out = strings.Replace(out, r[0], r[1], 1)
			}
			b.WriteString(out + "\n")
		}
	}
	return b.String(), nil
}

func TestTheFourGPUFileIsTheRecordingExtendedAsTheReadmeSays(t *testing.T) {
	want, err := fourGPUText(dcgmL4Recorded)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("testdata/dcgm-4gpu-2pods.txt", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(DCGM4GPU2Pods) != want {
		t.Fatal("testdata/dcgm-4gpu-2pods.txt is not testdata/dcgm-l4-1gpu.txt extended as testdata/README.md says; go test -run TestTheFourGPUFile -update rewrites it")
	}
}
