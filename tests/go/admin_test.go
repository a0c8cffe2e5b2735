package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

func httpGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	return httpDo(t, http.MethodGet, url, "", "")
}

func httpDo(t *testing.T, method, url, contentType, body string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp.StatusCode, answer
}

// getJSON GETs an object and fails unless the answer is 200 with a JSON object.
func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	status, body := httpGet(t, url)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, status, body)
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
	return out
}

func adminCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// Tenants and namespaces through pulsaradmin: create, list, get, delete.
func TestAdminTenantsNamespaces(t *testing.T) {
	admin := newAdmin(t)
	ctx := adminCtx(t)
	tenant := uniqueName(t)
	clusters, err := admin.Clusters().List()
	if err != nil || len(clusters) == 0 {
		t.Fatalf("clusters: %v %v", clusters, err)
	}
	if err := admin.Tenants().CreateWithContext(ctx, utils.TenantData{Name: tenant, AllowedClusters: clusters,
		AdminRoles: []string{"ops"}}); err != nil {
		t.Fatalf("create tenant: %v", err)
	}
	tenants, err := admin.Tenants().ListWithContext(ctx)
	if err != nil || !slices.Contains(tenants, tenant) {
		t.Fatalf("tenant list %v (%v) lacks %s", tenants, err, tenant)
	}
	td, err := admin.Tenants().GetWithContext(ctx, tenant)
	if err != nil || !slices.Equal(td.AdminRoles, []string{"ops"}) || !slices.Equal(td.AllowedClusters, clusters) {
		t.Fatalf("tenant %s: %+v %v", tenant, td, err)
	}
	ns := tenant + "/ns1"
	if err := admin.Namespaces().CreateNamespaceWithContext(ctx, ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if err := admin.Namespaces().CreateNamespaceWithContext(ctx, ns); err == nil {
		t.Fatal("creating an existing namespace succeeded, want 409")
	}
	nss, err := admin.Namespaces().GetNamespacesWithContext(ctx, tenant)
	if err != nil || !slices.Equal(nss, []string{ns}) {
		t.Fatalf("namespaces of %s: %v %v", tenant, nss, err)
	}
	if err := admin.Namespaces().SetRetentionWithContext(ctx, ns, utils.NewRetentionPolicies(60, 100)); err != nil {
		t.Fatalf("set retention: %v", err)
	}
	ret, err := admin.Namespaces().GetRetentionWithContext(ctx, ns)
	if err != nil || ret.RetentionTimeInMinutes != 60 || ret.RetentionSizeInMB != 100 {
		t.Fatalf("retention: %+v %v", ret, err)
	}
	// A tenant with a namespace cannot be deleted; an empty one can.
	if err := admin.Tenants().DeleteWithContext(ctx, tenant); err == nil {
		t.Fatal("deleting a tenant that has a namespace succeeded")
	}
	if err := admin.Namespaces().DeleteNamespaceWithContext(ctx, ns); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	if err := admin.Tenants().DeleteWithContext(ctx, tenant); err != nil {
		t.Fatalf("delete tenant: %v", err)
	}
	if _, err := admin.Tenants().GetWithContext(ctx, tenant); err == nil {
		t.Fatal("deleted tenant still found")
	}
}

// Topics through pulsaradmin: partitioned metadata, listing, stats with Pulsar's field names
// (also read as raw JSON), subscription backlog.
func TestAdminTopicsAndStats(t *testing.T) {
	admin := newAdmin(t)
	ctx := adminCtx(t)
	c := newClient(t)
	topic := uniqueTopic(t)
	tn, _ := utils.GetTopicName(topic)
	ptopic := uniqueTopic(t)
	ptn, _ := utils.GetTopicName(ptopic)
	createPartitioned(t, ptopic, 2)
	md, err := admin.Topics().GetMetadataWithContext(ctx, *ptn)
	if err != nil || md.Partitions != 2 {
		t.Fatalf("partitioned metadata: %+v %v", md, err)
	}
	if err := admin.Topics().UpdateWithContext(ctx, *ptn, 3); err != nil {
		t.Fatalf("update partitions: %v", err)
	}
	if md, _ = admin.Topics().GetMetadataWithContext(ctx, *ptn); md.Partitions != 3 {
		t.Fatalf("after update: %d partitions", md.Partitions)
	}

	// AckWithResponse: the ack is done (not grouped for later) when Ack returns.
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "billing", ReceiverQueueSize: 1,
		AckWithResponse: true})
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, Name: "stats-producer", DisableBatching: true})
	sendN(t, p, "m", 5)
	ack(t, cons, receive(t, cons))

	var partitioned, all []string
	for url, out := range map[string]*[]string{"/admin/v2/persistent/public/default/partitioned": &partitioned,
		"/admin/v2/persistent/public/default": &all} {
		status, body := httpGet(t, adminURL(t)+url)
		if status != http.StatusOK || json.Unmarshal(body, out) != nil {
			t.Fatalf("GET %s: %d %s", url, status, body)
		}
	}
	if !slices.Contains(partitioned, ptopic) || slices.Contains(partitioned, topic) {
		t.Fatalf("partitioned topic list: has %s %v, has %s %v", ptopic, slices.Contains(partitioned, ptopic),
			topic, slices.Contains(partitioned, topic))
	}
	if !slices.Contains(all, topic) {
		t.Fatalf("topic list lacks %s", topic)
	}

	stats, err := admin.Topics().GetStatsWithContext(ctx, *tn)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	if stats.MsgCounterIn != 5 {
		t.Fatalf("msgInCounter %d, want 5", stats.MsgCounterIn)
	}
	if len(stats.Publishers) != 1 || stats.Publishers[0].ProducerName != "stats-producer" {
		t.Fatalf("publishers: %+v", stats.Publishers)
	}
	sub, ok := stats.Subscriptions["billing"]
	if !ok {
		t.Fatalf("no subscription billing in %v", stats.Subscriptions)
	}
	if sub.MsgBacklog != 4 || len(sub.Consumers) != 1 || sub.SubType != "Exclusive" {
		t.Fatalf("subscription stats: backlog %d, %d consumers, type %q; want 4, 1, Exclusive",
			sub.MsgBacklog, len(sub.Consumers), sub.SubType)
	}

	raw := getJSON(t, adminURL(t)+"/admin/v2/persistent/"+tn.GetRestPath()[len("persistent/"):]+"/stats")
	for _, key := range []string{"msgRateIn", "msgThroughputIn", "msgInCounter", "bytesInCounter", "storageSize",
		"publishers", "subscriptions"} {
		if _, ok := raw[key]; !ok {
			t.Errorf("topic stats lack %q: %v", key, keysOfMap(raw))
		}
	}
	rawSub, _ := raw["subscriptions"].(map[string]any)["billing"].(map[string]any)
	for _, key := range []string{"msgBacklog", "msgRateOut", "unackedMessages", "type", "consumers"} {
		if _, ok := rawSub[key]; !ok {
			t.Errorf("subscription stats lack %q: %v", key, keysOfMap(rawSub))
		}
	}

	subs, err := admin.Subscriptions().ListWithContext(ctx, *tn)
	if err != nil || !slices.Equal(subs, []string{"billing"}) {
		t.Fatalf("subscriptions: %v %v", subs, err)
	}
	last, err := admin.Topics().GetLastMessageIDWithContext(ctx, *tn)
	if err != nil || last.EntryID != 4 {
		t.Fatalf("last message id: %+v %v", last, err)
	}
	if err := admin.Topics().DeleteWithContext(ctx, *ptn, true, false); err != nil {
		t.Fatalf("delete partitioned topic: %v", err)
	}
	if status, body := httpGet(t, adminURL(t)+"/admin/v2/persistent/"+ptn.GetRestPath()[len("persistent/"):]+
		"/partitions"); status == http.StatusOK && strings.Contains(string(body), `"partitions":3`) {
		t.Fatalf("deleted partitioned topic still has metadata: %s", body)
	}
}

// pulsaradmin's Topics().Create(topic, n > 0) PUTs {"partitions": n, "properties": ...} as
// application/vnd.partitioned-topic-metadata+json, which Pulsar accepts since 2.10 (PR 14117).
func TestAdminCreatePartitionedWithMetadataBody(t *testing.T) {
	admin := newAdmin(t)
	ctx := adminCtx(t)
	topic := uniqueTopic(t)
	tn, _ := utils.GetTopicName(topic)
	if err := admin.Topics().CreateWithPropertiesWithContext(ctx, *tn, 3, map[string]string{"owner": "go"}); err != nil {
		t.Fatalf("create partitioned topic with pulsaradmin: %v", err)
	}
	md, err := admin.Topics().GetMetadataWithContext(ctx, *tn)
	if err != nil || md.Partitions != 3 {
		t.Fatalf("partitioned metadata: %+v %v", md, err)
	}
}

// pulsaradmin's Topics().List reads the persistent and the non-persistent lists of the namespace.
func TestAdminListTopicsWithPulsarAdmin(t *testing.T) {
	admin := newAdmin(t)
	ctx := adminCtx(t)
	c := newClient(t)
	topic := uniqueTopic(t)
	newProducer(t, c, pulsar.ProducerOptions{Topic: topic})
	ns, _ := utils.GetNamespaceName("public/default")
	_, nonPartitioned, err := admin.Topics().ListWithContext(ctx, *ns)
	if err != nil || !slices.Contains(nonPartitioned, topic) {
		t.Fatalf("pulsaradmin topic list has %s: %v (%v)", topic, slices.Contains(nonPartitioned, topic), err)
	}
}

// Creating (and growing) a partitioned topic creates its persistent partitions, so the
// namespace's topic list names them before anything was published.
func TestAdminPartitionsListedAfterCreate(t *testing.T) {
	topic := uniqueTopic(t)
	createPartitioned(t, topic, 3)
	var all []string
	status, body := httpGet(t, adminURL(t)+"/admin/v2/persistent/public/default")
	if status != http.StatusOK || json.Unmarshal(body, &all) != nil {
		t.Fatalf("topic list: %d %s", status, body)
	}
	for i := range 3 {
		if p := fmt.Sprintf("%s-partition-%d", topic, i); !slices.Contains(all, p) {
			t.Fatalf("topic list lacks %s", p)
		}
	}
}

func keysOfMap(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
