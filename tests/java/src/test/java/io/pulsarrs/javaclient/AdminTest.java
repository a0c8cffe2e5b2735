package io.pulsarrs.javaclient;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.pulsar.client.admin.PulsarAdminException;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.common.naming.TopicDomain;
import org.apache.pulsar.common.policies.data.AuthAction;
import org.apache.pulsar.common.policies.data.BacklogQuota;
import org.apache.pulsar.common.policies.data.ClusterData;
import org.apache.pulsar.common.policies.data.PartitionedTopicStats;
import org.apache.pulsar.common.policies.data.PersistentTopicInternalStats;
import org.apache.pulsar.common.policies.data.Policies;
import org.apache.pulsar.common.policies.data.RetentionPolicies;
import org.apache.pulsar.common.policies.data.SubscriptionStats;
import org.apache.pulsar.common.policies.data.TenantInfo;
import org.apache.pulsar.common.policies.data.TopicStats;
import org.junit.jupiter.api.Test;

/** The Java {@code PulsarAdmin} against the broker's REST API (docs/admin.md's operations). */
class AdminTest extends PulsarTestBase {

  private static String uniq(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  private List<MessageId> sendN(String t, int n) throws Exception {
    List<MessageId> ids = new ArrayList<>();
    try (Producer<byte[]> p = newProducer().topic(t).enableBatching(false).create()) {
      for (int i = 0; i < n; i++) {
        ids.add(p.send(("m" + i).getBytes(StandardCharsets.UTF_8)));
      }
    }
    return ids;
  }

  /**
   * The client's own health check (the 4.0 client asks with {@code topicVersion=V1}; 4.2 and 5.0, whose
   * admin API no longer has {@code TopicVersion}, without it), and the {@code topicVersion=V2} one,
   * asked over HTTP as the 4.0 client's {@code healthcheck(TopicVersion.V2)} does.
   */
  @Test
  void brokersHealthcheck() throws Exception {
    admin.brokers().healthcheck();
    HttpResponse<String> v2 =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(adminUrl() + "/admin/v2/brokers/health?topicVersion=V2")).build(),
                HttpResponse.BodyHandlers.ofString());
    assertEquals(200, v2.statusCode(), v2.body());
    assertEquals("ok", v2.body());
  }

  @Test
  void clustersListGetCreateUpdateDelete() throws Exception {
    List<String> clusters = admin.clusters().getClusters();
    assertTrue(clusters.contains("standalone"), clusters.toString());
    String name = uniq("c");
    admin.clusters()
        .createCluster(
            name,
            ClusterData.builder().serviceUrl("http://127.0.0.1:1").brokerServiceUrl("pulsar://127.0.0.1:2").build());
    ClusterData got = admin.clusters().getCluster(name);
    assertEquals("http://127.0.0.1:1", got.getServiceUrl());
    assertEquals("pulsar://127.0.0.1:2", got.getBrokerServiceUrl());
    admin.clusters()
        .updateCluster(
            name,
            ClusterData.builder().serviceUrl("http://127.0.0.1:3").brokerServiceUrl("pulsar://127.0.0.1:2").build());
    assertEquals("http://127.0.0.1:3", admin.clusters().getCluster(name).getServiceUrl());
    assertTrue(admin.clusters().getClusters().contains(name));
    admin.clusters().deleteCluster(name);
    assertFalse(admin.clusters().getClusters().contains(name));
    assertThrows(PulsarAdminException.NotFoundException.class, () -> admin.clusters().getCluster(name));
  }

  @Test
  void tenantsCreateGetUpdateDelete() throws Exception {
    String tenant = uniq("tenant");
    admin.tenants()
        .createTenant(tenant, TenantInfo.builder().adminRoles(Set.of("ops")).allowedClusters(Set.of("standalone")).build());
    assertTrue(admin.tenants().getTenants().contains(tenant));
    TenantInfo info = admin.tenants().getTenantInfo(tenant);
    assertEquals(Set.of("ops"), info.getAdminRoles());
    assertEquals(Set.of("standalone"), info.getAllowedClusters());
    assertThrows(
        PulsarAdminException.ConflictException.class,
        () -> admin.tenants().createTenant(tenant, TenantInfo.builder().allowedClusters(Set.of("standalone")).build()));
    admin.tenants()
        .updateTenant(
            tenant, TenantInfo.builder().adminRoles(Set.of("ops", "dev")).allowedClusters(Set.of("standalone")).build());
    assertEquals(Set.of("ops", "dev"), admin.tenants().getTenantInfo(tenant).getAdminRoles());
    admin.tenants().deleteTenant(tenant);
    assertFalse(admin.tenants().getTenants().contains(tenant));
    assertThrows(PulsarAdminException.NotFoundException.class, () -> admin.tenants().getTenantInfo(tenant));
  }

  @Test
  void namespacesCreateListPoliciesDelete() throws Exception {
    String tenant = uniq("ns-tenant");
    admin.tenants().createTenant(tenant, TenantInfo.builder().allowedClusters(Set.of("standalone")).build());
    String ns = tenant + "/orders";
    admin.namespaces().createNamespace(ns);
    assertEquals(List.of(ns), admin.namespaces().getNamespaces(tenant));
    assertThrows(PulsarAdminException.ConflictException.class, () -> admin.namespaces().createNamespace(ns));

    admin.namespaces().setRetention(ns, new RetentionPolicies(180, 10240));
    RetentionPolicies retention = admin.namespaces().getRetention(ns);
    assertEquals(180, retention.getRetentionTimeInMinutes());
    assertEquals(10240, retention.getRetentionSizeInMB());

    assertNull(admin.namespaces().getNamespaceMessageTTL(ns));
    admin.namespaces().setNamespaceMessageTTL(ns, 3600);
    assertEquals(3600, admin.namespaces().getNamespaceMessageTTL(ns));
    admin.namespaces().removeNamespaceMessageTTL(ns);
    assertNull(admin.namespaces().getNamespaceMessageTTL(ns));

    admin.namespaces().setDeduplicationStatus(ns, true);
    assertTrue(admin.namespaces().getDeduplicationStatus(ns));

    admin.namespaces().grantPermissionOnNamespace(ns, "app", Set.of(AuthAction.produce, AuthAction.consume));
    assertEquals(Set.of(AuthAction.produce, AuthAction.consume), admin.namespaces().getPermissions(ns).get("app"));

    Policies policies = admin.namespaces().getPolicies(ns);
    assertEquals(180, policies.retention_policies.getRetentionTimeInMinutes());
    assertTrue(policies.auth_policies.getNamespaceAuthentication().containsKey("app"));

    String t = "persistent://" + ns + "/t1";
    admin.topics().createNonPartitionedTopic(t);
    assertEquals(List.of(t), admin.namespaces().getTopics(ns));
    admin.topics().delete(t);
    admin.namespaces().deleteNamespace(ns);
    assertEquals(List.of(), admin.namespaces().getNamespaces(tenant));
    admin.tenants().deleteTenant(tenant);
  }

  @Test
  void namespaceBacklogQuota() throws Exception {
    String ns = "public/" + uniq("bq");
    admin.namespaces().createNamespace(ns);
    admin.namespaces()
        .setBacklogQuota(
            ns,
            BacklogQuota.builder()
                .limitSize(10L * 1024 * 1024 * 1024)
                .retentionPolicy(BacklogQuota.RetentionPolicy.producer_request_hold)
                .build());
    Map<BacklogQuota.BacklogQuotaType, BacklogQuota> quotas = admin.namespaces().getBacklogQuotaMap(ns);
    BacklogQuota quota = quotas.get(BacklogQuota.BacklogQuotaType.destination_storage);
    assertEquals(10L * 1024 * 1024 * 1024, quota.getLimitSize());
    assertEquals(BacklogQuota.RetentionPolicy.producer_request_hold, quota.getPolicy());

  }

  @Test
  void namespacePoliciesShowDeduplication() throws Exception {
    String ns = "public/" + uniq("dedup-policies");
    admin.namespaces().createNamespace(ns);
    admin.namespaces().setDeduplicationStatus(ns, true);
    assertTrue(admin.namespaces().getDeduplicationStatus(ns));
    assertEquals(Boolean.TRUE, admin.namespaces().getPolicies(ns).deduplicationEnabled);
  }

  @Test
  void topicListsOfBothDomains() throws Exception {
    // PulsarAdmin lists /admin/v2/persistent/{ns} and /admin/v2/non-persistent/{ns} and merges them.
    String t = topic("admin-list");
    String p = topic("admin-list-partitioned");
    admin.topics().createNonPartitionedTopic(t);
    admin.topics().createPartitionedTopic(p, 2);
    List<String> all = admin.topics().getList("public/default");
    assertTrue(all.contains(t), all.toString());
    assertTrue(all.contains(p + "-partition-0"), all.toString());
    List<String> persistent = admin.topics().getList("public/default", TopicDomain.persistent);
    assertTrue(persistent.contains(t), persistent.toString());
    assertTrue(admin.topics().getPartitionedTopicList("public/default").contains(p));
    assertFalse(admin.topics().getPartitionedTopicList("public/default").contains(t));
  }

  @Test
  void topicsCreateListStatsDelete() throws Exception {
    String t = topic("admin-topic");
    admin.topics().createNonPartitionedTopic(t);
    assertTrue(admin.namespaces().getTopics("public/default").contains(t));
    assertThrows(PulsarAdminException.ConflictException.class, () -> admin.topics().createNonPartitionedTopic(t));
    admin.topics().createSubscription(t, "billing", MessageId.earliest);
    List<MessageId> ids = sendN(t, 10);

    TopicStats stats = admin.topics().getStats(t);
    assertEquals(10, stats.getMsgInCounter());
    SubscriptionStats sub = stats.getSubscriptions().get("billing");
    assertEquals(10, sub.getMsgBacklog());

    PersistentTopicInternalStats internal = admin.topics().getInternalStats(t);
    assertEquals(10, internal.numberOfEntries);
    assertTrue(internal.cursors.containsKey("billing"));
    MessageIdAdv last = (MessageIdAdv) ids.get(9);
    assertEquals(last.getLedgerId() + ":" + last.getEntryId(), internal.lastConfirmedEntry);

    MessageIdAdv lastId = (MessageIdAdv) admin.topics().getLastMessageId(t);
    assertEquals(last.getLedgerId(), lastId.getLedgerId());
    assertEquals(last.getEntryId(), lastId.getEntryId());

    Message<byte[]> byId = admin.topics().getMessageById(t, last.getLedgerId(), last.getEntryId());
    assertEquals("m9", new String(byId.getData(), StandardCharsets.UTF_8));

    List<Message<byte[]>> peeked = admin.topics().peekMessages(t, "billing", 3);
    assertEquals(List.of("m0", "m1", "m2"), strings(peeked));
    assertEquals(10, admin.topics().getStats(t).getSubscriptions().get("billing").getMsgBacklog(), "peek consumes nothing");

    Message<byte[]> examined = admin.topics().examineMessage(t, "earliest", 1);
    assertEquals("m0", new String(examined.getData(), StandardCharsets.UTF_8));

    admin.topics().delete(t);
    assertFalse(admin.namespaces().getTopics("public/default").contains(t));
    assertThrows(PulsarAdminException.NotFoundException.class, () -> admin.topics().getStats(t));
  }

  @Test
  void partitionedTopicsCreateUpdateStatsDelete() throws Exception {
    String t = topic("admin-partitioned");
    admin.topics().createPartitionedTopic(t, 2);
    assertEquals(2, admin.topics().getPartitionedTopicMetadata(t).partitions);
    admin.topics().updatePartitionedTopic(t, 3);
    assertEquals(3, admin.topics().getPartitionedTopicMetadata(t).partitions);
    assertThrows(PulsarAdminException.class, () -> admin.topics().updatePartitionedTopic(t, 2));
    try (Producer<byte[]> p =
        newProducer().topic(t).enableBatching(false)
            .messageRoutingMode(org.apache.pulsar.client.api.MessageRoutingMode.RoundRobinPartition).create()) {
      for (int i = 0; i < 6; i++) {
        p.send(("m" + i).getBytes(StandardCharsets.UTF_8));
      }
    }
    PartitionedTopicStats stats = admin.topics().getPartitionedStats(t, true);
    assertEquals(6, stats.getMsgInCounter());
    assertEquals(3, stats.getMetadata().partitions);
    assertEquals(3, stats.getPartitions().size());
    for (TopicStats part : stats.getPartitions().values()) {
      assertEquals(2, part.getMsgInCounter());
    }
    admin.topics().deletePartitionedTopic(t);
    assertEquals(0L, admin.namespaces().getTopics("public/default").stream().filter(x -> x.startsWith(t)).count());
  }

  @Test
  void subscriptionsCreateSkipResetExpireClearDelete() throws Exception {
    String t = topic("admin-subs");
    admin.topics().createNonPartitionedTopic(t);
    admin.topics().createSubscription(t, "billing", MessageId.earliest);
    admin.topics().createSubscription(t, "audit", MessageId.latest);
    assertEquals(Set.of("billing", "audit"), Set.copyOf(admin.topics().getSubscriptions(t)));
    long beforeSend = System.currentTimeMillis();
    List<MessageId> ids = sendN(t, 10);

    admin.topics().skipMessages(t, "billing", 4);
    assertEquals(6, backlog(t, "billing"));

    admin.topics().resetCursor(t, "billing", ids.get(2));
    assertEquals(8, backlog(t, "billing"), "reset to m2: m2..m9 left");

    admin.topics().skipAllMessages(t, "billing");
    assertEquals(0, backlog(t, "billing"));

    admin.topics().resetCursor(t, "billing", beforeSend - 1000);
    assertEquals(10, backlog(t, "billing"), "reset by time before the first message");

    Consumer<byte[]> c = client.newConsumer().topic(t).subscriptionName("billing").subscribe();
    assertEquals(range("m", 0, 10), strings(receiveAndAck(c, 10)));
    c.close();

    // Expire: messages older than 1 s go.
    Thread.sleep(1500);
    assertEquals(10, backlog(t, "audit"));
    admin.topics().expireMessages(t, "audit", 1);
    awaitBacklog(t, "audit", 0);

    // For all subscriptions: each must have something to expire (Pulsar answers 409 for a
    // subscription whose expiry is not issued, as for a single one).
    admin.topics().resetCursor(t, "audit", ids.get(0));
    admin.topics().resetCursor(t, "billing", ids.get(0));
    assertEquals(10, backlog(t, "audit"));
    assertEquals(10, backlog(t, "billing"));
    admin.topics().expireMessagesForAllSubscriptions(t, 1);
    awaitBacklog(t, "audit", 0);
    awaitBacklog(t, "billing", 0);

    admin.topics().deleteSubscription(t, "audit");
    assertEquals(List.of("billing"), admin.topics().getSubscriptions(t));
    assertThrows(PulsarAdminException.NotFoundException.class, () -> admin.topics().skipMessages(t, "nobody", 1));

    // Unsubscribing is refused while a consumer is connected, unless forced.
    Consumer<byte[]> connected = client.newConsumer().topic(t).subscriptionName("billing").subscribe();
    assertThrows(PulsarAdminException.PreconditionFailedException.class,
        () -> admin.topics().deleteSubscription(t, "billing"));
    admin.topics().deleteSubscription(t, "billing", true);
    assertFalse(admin.topics().getSubscriptions(t).contains("billing") && !connected.isConnected());
  }

  @Test
  void topicPoliciesAndPermissions() throws Exception {
    String t = topic("admin-topic-policies");
    admin.topics().createNonPartitionedTopic(t);
    admin.topicPolicies().setRetention(t, new RetentionPolicies(60, 512));
    RetentionPolicies r = admin.topicPolicies().getRetention(t);
    assertEquals(60, r.getRetentionTimeInMinutes());
    assertEquals(512, r.getRetentionSizeInMB());
    admin.topicPolicies().setMessageTTL(t, 120);
    assertEquals(120, admin.topicPolicies().getMessageTTL(t));
    admin.topicPolicies().removeMessageTTL(t);
    assertNull(admin.topicPolicies().getMessageTTL(t));
    admin.topicPolicies().setDeduplicationStatus(t, true);
    assertTrue(admin.topicPolicies().getDeduplicationStatus(t));

    admin.topics().grantPermission(t, "app", Set.of(AuthAction.produce, AuthAction.consume));
    assertEquals(Set.of(AuthAction.produce, AuthAction.consume), admin.topics().getPermissions(t).get("app"));
    admin.topics().revokePermissions(t, "app");
    assertFalse(admin.topics().getPermissions(t).containsKey("app"));
  }

  @Test
  void schemasGetUploadDelete() throws Exception {
    String t = topic("admin-schema");
    client.newProducer(org.apache.pulsar.client.api.Schema.JSON(SchemaTest.User.class)).topic(t).create().close();
    var info = admin.schemas().getSchemaInfo(t);
    assertEquals(org.apache.pulsar.common.schema.SchemaType.JSON, info.getType());
    var withVersion = admin.schemas().getSchemaInfoWithVersion(t);
    assertEquals(0, withVersion.getVersion());
    admin.schemas().deleteSchema(t);
    assertThrows(PulsarAdminException.NotFoundException.class, () -> admin.schemas().getSchemaInfo(t));
    // Upload again after deletion.
    admin.schemas().createSchema(t, org.apache.pulsar.client.api.Schema.STRING.getSchemaInfo());
    assertEquals(org.apache.pulsar.common.schema.SchemaType.STRING, admin.schemas().getSchemaInfo(t).getType());
    assertArrayEquals(new byte[0], admin.schemas().getSchemaInfo(t).getSchema());
  }
}
