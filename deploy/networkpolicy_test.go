package deploy

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// selectingPolicies are the ingress policies of namespace ns whose
// podSelector picks a pod with podLabels.
func selectingPolicies(t *testing.T, policies []*networkingv1.NetworkPolicy, ns string, podLabels map[string]string) []*networkingv1.NetworkPolicy {
	t.Helper()
	var out []*networkingv1.NetworkPolicy
	for _, p := range policies {
		if p.Namespace != ns {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		require.NoError(t, err, "NetworkPolicy %s: podSelector", p.Name)
		ingress := len(p.Spec.PolicyTypes) == 0 || slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
		if ingress && sel.Matches(labels.Set(podLabels)) {
			out = append(out, p)
		}
	}
	return out
}

// everyone reports whether a peer admits any pod or address: no selector at
// all, an empty namespaceSelector without a podSelector, or an ipBlock of the
// whole address space.
func everyone(peer networkingv1.NetworkPolicyPeer) bool {
	if peer.IPBlock != nil {
		return peer.IPBlock.CIDR == "0.0.0.0/0" || peer.IPBlock.CIDR == "::/0"
	}
	emptyNS := peer.NamespaceSelector != nil && len(peer.NamespaceSelector.MatchLabels) == 0 && len(peer.NamespaceSelector.MatchExpressions) == 0
	emptyPod := peer.PodSelector == nil || (len(peer.PodSelector.MatchLabels) == 0 && len(peer.PodSelector.MatchExpressions) == 0)
	return peer.NamespaceSelector == nil && peer.PodSelector == nil || emptyNS && emptyPod
}

// covers reports whether an ingress rule applies to port (a rule without
// ports applies to every port).
func covers(rule networkingv1.NetworkPolicyIngressRule, port int, ctrPorts []corev1.ContainerPort) bool {
	if len(rule.Ports) == 0 {
		return true
	}
	for _, p := range rule.Ports {
		switch {
		case p.Port == nil:
			return true
		case p.Port.Type == intstr.Int && int(p.Port.IntVal) == port:
			return true
		case p.Port.Type == intstr.String && slices.ContainsFunc(ctrPorts, func(cp corev1.ContainerPort) bool {
			return cp.Name == p.Port.StrVal && int(cp.ContainerPort) == port
		}):
			return true
		}
	}
	return false
}

// policyAdmission is the admission of a pod with podLabels in ns: a port is
// restricted when at least one policy selects the pod and every rule that
// covers the port names its peers.
func policyAdmission(t *testing.T, policies []*networkingv1.NetworkPolicy, ns string, podLabels map[string]string, ctrPorts []corev1.ContainerPort) admission {
	t.Helper()
	selecting := selectingPolicies(t, policies, ns, podLabels)
	return func(port int) (bool, string) {
		if len(selecting) == 0 {
			return false, fmt.Sprintf("no NetworkPolicy selects the pod (labels %v): ship one that admits port %d from named peers only, or bind it to loopback", podLabels, port)
		}
		for _, p := range selecting {
			for i, rule := range p.Spec.Ingress {
				if !covers(rule, port, ctrPorts) {
					continue
				}
				if len(rule.From) == 0 {
					return false, fmt.Sprintf("NetworkPolicy %s's ingress rule %d admits everyone to port %d: name the peers (from:)", p.Name, i, port)
				}
				for _, peer := range rule.From {
					if everyone(peer) {
						return false, fmt.Sprintf("NetworkPolicy %s's ingress rule %d admits every pod or address to port %d", p.Name, i, port)
					}
				}
			}
		}
		return true, ""
	}
}

// admittedFrom reports whether some policy selecting the pod admits a peer
// pod (in peerNS with peerLabels, the namespace labelled nsLabels) to port.
func admittedFrom(t *testing.T, policies []*networkingv1.NetworkPolicy, ns string, podLabels map[string]string, port int, peerNS string, nsLabels, peerLabels map[string]string) bool {
	t.Helper()
	for _, p := range selectingPolicies(t, policies, ns, podLabels) {
		for _, rule := range p.Spec.Ingress {
			if !covers(rule, port, nil) {
				continue
			}
			for _, peer := range rule.From {
				nsOK := peer.NamespaceSelector == nil && peerNS == ns
				if peer.NamespaceSelector != nil {
					sel, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
					require.NoError(t, err)
					nsOK = sel.Matches(labels.Set(nsLabels))
				}
				podOK := true
				if peer.PodSelector != nil {
					sel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
					require.NoError(t, err)
					podOK = sel.Matches(labels.Set(peerLabels))
				}
				if nsOK && podOK && peer.IPBlock == nil {
					return true
				}
			}
		}
	}
	return false
}

func (c cluster) networkPolicies() []*networkingv1.NetworkPolicy {
	var out []*networkingv1.NetworkPolicy
	for _, obj := range c {
		if p, ok := obj.(*networkingv1.NetworkPolicy); ok {
			out = append(out, p)
		}
	}
	return out
}

// The namespaces and pods the policies name: the monitoring namespace, a
// trainer in its own namespace.
var (
	monitoringNS     = map[string]string{"kubernetes.io/metadata.name": "monitoring"}
	trainerNS        = map[string]string{"kubernetes.io/metadata.name": "team-a"}
	labelledTrainer  = map[string]string{"telemetry.primeintellect.ai/sender": "true"}
	unlabelledPod    = map[string]string{"app": "something-else"}
	telemetryNSLabel = map[string]string{"kubernetes.io/metadata.name": namespace}
)

// Who may reach what in deploy/kubernetes: each tier's OTLP from the tier
// before it, Redis from the gateways, metrics from the monitoring namespace,
// and nobody else, health included.
func TestTheNetworkPoliciesAdmitEachPortFromItsPeersOnly(t *testing.T) {
	c := loadCluster(t)
	policies := c.networkPolicies()
	require.NotEmpty(t, policies, "deploy/kubernetes ships NetworkPolicies")
	podLabels := func(kind, name string) map[string]string { return podTemplate(t, c.get(t, kind, name)).Labels }
	gateway, agent, redis := podLabels("Deployment", "prime-gateway"), podLabels("DaemonSet", "prime-agent"), podLabels("StatefulSet", "prime-redis")
	trainer := podLabels("Job", "trainer")

	for _, tc := range []struct {
		name             string
		pod              map[string]string
		port             int
		peerNS           string
		nsLabels, labels map[string]string
		want             bool
	}{
		{"the agents reach the gateways' OTLP", gateway, 4317, namespace, telemetryNSLabel, agent, true},
		{"a labelled trainer does not reach the gateways' OTLP", gateway, 4317, "team-a", trainerNS, labelledTrainer, false},
		{"the monitoring namespace scrapes the gateways' metrics", gateway, 8888, "monitoring", monitoringNS, unlabelledPod, true},
		{"the agents do not reach the gateways' health", gateway, 13133, namespace, telemetryNSLabel, agent, false},
		{"a labelled trainer in another namespace reaches the agents' OTLP/gRPC", agent, 4317, "team-a", trainerNS, labelledTrainer, true},
		{"a labelled trainer reaches the agents' OTLP/HTTP", agent, 4318, "team-a", trainerNS, labelledTrainer, true},
		{"an unlabelled pod does not reach the agents' OTLP", agent, 4317, "team-a", trainerNS, unlabelledPod, false},
		{"a labelled trainer does not reach the agents' metrics", agent, 8888, "team-a", trainerNS, labelledTrainer, false},
		{"the monitoring namespace scrapes the agents' metrics", agent, 8888, "monitoring", monitoringNS, unlabelledPod, true},
		{"the gateways reach Redis", redis, 6379, namespace, telemetryNSLabel, gateway, true},
		{"the agents do not reach Redis", redis, 6379, namespace, telemetryNSLabel, agent, false},
		{"a trainer does not reach Redis", redis, 6379, "team-a", trainerNS, labelledTrainer, false},
		{"the monitoring namespace scrapes the sidecar's metrics", trainer, 8888, "monitoring", monitoringNS, unlabelledPod, true},
		{"another pod does not reach the sidecar's health", trainer, 13133, namespace, telemetryNSLabel, agent, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, admittedFrom(t, policies, namespace, tc.pod, tc.port, tc.peerNS, tc.nsLabels, tc.labels))
		})
	}
}

// The admission check must see through a policy that admits everyone, or a
// config passing it means nothing.
func TestAPolicyThatAdmitsEveryoneDoesNotRestrictAPort(t *testing.T) {
	pod := map[string]string{"app": "x"}
	policy := func(rules ...networkingv1.NetworkPolicyIngressRule) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: namespace},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: pod},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, Ingress: rules},
		}}
	}
	port := func(n int32) []networkingv1.NetworkPolicyPort {
		p := intstr.FromInt32(n)
		return []networkingv1.NetworkPolicyPort{{Port: &p}}
	}
	monitoring := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: monitoringNS}}
	for _, tc := range []struct {
		name     string
		policies []*networkingv1.NetworkPolicy
		want     bool
	}{
		{"no policy", nil, false},
		{"a rule for the port from the monitoring namespace", policy(networkingv1.NetworkPolicyIngressRule{Ports: port(8888), From: []networkingv1.NetworkPolicyPeer{monitoring}}), true},
		{"no rule for the port (only the node reaches it)", policy(networkingv1.NetworkPolicyIngressRule{Ports: port(4317), From: []networkingv1.NetworkPolicyPeer{monitoring}}), true},
		{"a rule for the port with no from", policy(networkingv1.NetworkPolicyIngressRule{Ports: port(8888)}), false},
		{"a rule with no ports and no from", policy(networkingv1.NetworkPolicyIngressRule{}), false},
		{"a rule from every namespace", policy(networkingv1.NetworkPolicyIngressRule{Ports: port(8888), From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}}), false},
		{"a rule from 0.0.0.0/0", policy(networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}}}}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := policyAdmission(t, tc.policies, namespace, pod, nil)(8888)
			assert.Equal(t, tc.want, ok, why)
		})
	}
}
