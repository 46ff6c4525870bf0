package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The operators' alert rules and dashboard (monitoring/). That their metric
// names are ones the collector exports is checked against a running
// collector in e2e/monitoring_test.go; here: the two forms of the rules are
// the same, promtool accepts them and passes their unit tests, every alert
// has a test in which it fires and one in which it stays quiet, and the
// dashboard is one Grafana can import.

const (
	rulesFile          = "monitoring/prime-rules.yaml"
	rulesTestFile      = "monitoring/prime-rules.test.yaml"
	prometheusRuleFile = "monitoring/prometheusrule.yaml"
	dashboardFile      = "monitoring/prime-dashboard.json"
)

// promtool is Debian's (the prometheus package): a missing one fails the
// test, as promtool is what checks the rules.
func promtool(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool checks the alert rules: install Debian's prometheus package (bash -c 'source scripts/lib.sh; ensure_promtool')")
	return bin
}

func TestPromtoolAcceptsTheRulesAndTheirUnitTestsPass(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", filepath.Base(rulesFile)},
		{"test", "rules", filepath.Base(rulesTestFile)},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = filepath.Dir(rulesFile)
		out, err := cmd.CombinedOutput()
		cancel()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
		require.Contains(t, string(out), "SUCCESS", "promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

// ruleGroups is the groups section of a rules file, read as it is written.
type ruleGroups struct {
	Groups []any `json:"groups"`
}

func TestThePrometheusRuleHoldsExactlyTheRulesOfTheRulesFile(t *testing.T) {
	var file ruleGroups
	body, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(body, &file), rulesFile)

	var pr struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec ruleGroups `json:"spec"`
	}
	body, err = os.ReadFile(prometheusRuleFile)
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(body, &pr), prometheusRuleFile)
	require.Equal(t, "monitoring.coreos.com/v1", pr.APIVersion)
	require.Equal(t, "PrometheusRule", pr.Kind)
	require.Equal(t, namespace, pr.Metadata.Namespace, "the PrometheusRule lives beside the collectors it watches")
	require.NotEmpty(t, pr.Metadata.Name)
	require.Equal(t, file.Groups, pr.Spec.Groups, "%s's spec.groups must be %s's groups word for word: edit the rules file, then copy its groups", prometheusRuleFile, rulesFile)
}

func TestEveryAlertFiresInAUnitTestAndStaysQuietInAnother(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	body, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(body, &rules))

	var tests struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			Checks []struct {
				Alert string `json:"alertname"`
				Exp   []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	body, err = os.ReadFile(rulesTestFile)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(body, &tests))
	require.Equal(t, []string{filepath.Base(rulesFile)}, tests.RuleFiles)

	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, c := range tc.Checks {
			if len(c.Exp) > 0 {
				fires[c.Alert] = true
			} else {
				quiet[c.Alert] = true
			}
		}
	}
	var alerts int
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			require.True(t, fires[r.Alert], "%s has no unit test in %s in which it fires", r.Alert, rulesTestFile)
			require.True(t, quiet[r.Alert], "%s has no unit test in %s in which it stays quiet", r.Alert, rulesTestFile)
		}
	}
	require.NotZero(t, alerts, "%s has no alerts", rulesFile)
}

// grafanaPanel is what the dashboard test reads of a panel.
type grafanaPanel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *grafanaRef              `json:"datasource"`
	GridPos    struct{ H, W, X, Y int } `json:"gridPos"`
	Panels     []grafanaPanel           `json:"panels"`
	Targets    []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *grafanaRef `json:"datasource"`
	} `json:"targets"`
}

type grafanaRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func TestTheDashboardIsImportableAndEveryPanelQueriesTheChosenPrometheus(t *testing.T) {
	body, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var dash struct {
		UID           string         `json:"uid"`
		Title         string         `json:"title"`
		SchemaVersion int            `json:"schemaVersion"`
		Panels        []grafanaPanel `json:"panels"`
		Templating    struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(body, &dash), dashboardFile)
	require.NotEmpty(t, dash.UID, "a fixed uid keeps links to the dashboard across imports")
	require.NotEmpty(t, dash.Title)
	require.GreaterOrEqual(t, dash.SchemaVersion, 36, "a schema Grafana 10 and later import as it is")

	vars := map[string]string{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = v.Type
	}
	require.Equal(t, "datasource", vars["datasource"], "the data source is a variable, chosen at import")

	ids := map[int]string{}
	var check func([]grafanaPanel)
	check = func(ps []grafanaPanel) {
		for _, p := range ps {
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			require.NotZero(t, p.ID, where)
			require.Empty(t, ids[p.ID], "%s: id taken by %s", where, ids[p.ID])
			ids[p.ID] = p.Title
			require.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "%s is wider than the grid", where)
			check(p.Panels)
			if p.Type == "row" {
				continue
			}
			require.NotEmpty(t, p.Targets, "%s has no query", where)
			require.NotNil(t, p.Datasource, where)
			require.Equal(t, grafanaRef{Type: "prometheus", UID: "${datasource}"}, *p.Datasource, where)
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, where)
				require.False(t, refs[tg.RefID], "%s: refId %s twice", where, tg.RefID)
				refs[tg.RefID] = true
				if tg.Datasource != nil {
					require.Equal(t, *p.Datasource, *tg.Datasource, where)
				}
			}
		}
	}
	check(dash.Panels)
	require.NotEmpty(t, ids, "the dashboard has no panels")
}
