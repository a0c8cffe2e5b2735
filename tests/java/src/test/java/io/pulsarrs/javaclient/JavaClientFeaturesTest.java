package io.pulsarrs.javaclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.TableView;
import org.apache.pulsar.client.api.transaction.TransactionCoordinatorClientException;
import org.junit.jupiter.api.Test;

/** What the Java client does its own way: pattern consumers, TableView, transactions. */
class JavaClientFeaturesTest extends PulsarTestBase {

  @Test
  void patternConsumerPicksUpATopicCreatedAfterSubscribe() throws Exception {
    String base = "persistent://public/default/pat-" + UUID.randomUUID().toString().substring(0, 8);
    Producer<byte[]> first = newProducer().topic(base + "-a").enableBatching(false).create();
    Consumer<byte[]> c =
        client
            .newConsumer()
            .topicsPattern(Pattern.compile(base + "-.*"))
            .patternAutoDiscoveryPeriod(1, TimeUnit.SECONDS)
            .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
            .subscriptionName("s")
            .subscribe();
    first.send("a0".getBytes(StandardCharsets.UTF_8));
    Message<byte[]> m = c.receive(5, TimeUnit.SECONDS);
    assertNotNull(m, "message on the topic that existed at subscribe");
    assertEquals("a0", new String(m.getData(), StandardCharsets.UTF_8));
    assertEquals(base + "-a", m.getTopicName());
    c.acknowledge(m);
    // A topic that matches, created after subscribe: the consumer subscribes to it by itself
    // (topic-list watch, or the client's periodic namespace listing).
    Producer<byte[]> second = newProducer().topic(base + "-b").enableBatching(false).create();
    second.send("b0".getBytes(StandardCharsets.UTF_8));
    Message<byte[]> fromNew = c.receive(20, TimeUnit.SECONDS);
    assertNotNull(fromNew, "the pattern consumer never picked up " + base + "-b");
    assertEquals("b0", new String(fromNew.getData(), StandardCharsets.UTF_8));
    assertEquals(base + "-b", fromNew.getTopicName());
    c.acknowledge(fromNew);
    // A topic that does not match is not picked up.
    Producer<byte[]> other =
        newProducer().topic(base.replace("pat-", "nomatch-") + "-c").enableBatching(false).create();
    other.send("c0".getBytes(StandardCharsets.UTF_8));
    second.send("b1".getBytes(StandardCharsets.UTF_8));
    assertEquals(List.of("b1"), strings(receive(c, 2, Duration.ofSeconds(3), true)));
    assertEquals(
        Set.of("a", "b"),
        new HashSet<>(admin.namespaces().getTopics("public/default").stream()
            .filter(x -> x.startsWith(base + "-")).map(x -> x.substring(base.length() + 1)).toList()));
  }

  @Test
  void multiTopicConsumerOnAListOfTopics() throws Exception {
    String a = topic("multi-a");
    String b = topic("multi-b");
    Consumer<byte[]> c = client.newConsumer().topics(List.of(a, b)).subscriptionName("s").subscribe();
    newProducer().topic(a).create().send("x".getBytes(StandardCharsets.UTF_8));
    newProducer().topic(b).create().send("y".getBytes(StandardCharsets.UTF_8));
    Map<String, String> got = new HashMap<>();
    for (Message<byte[]> m : receiveAndAck(c, 2)) {
      got.put(m.getTopicName(), new String(m.getData(), StandardCharsets.UTF_8));
    }
    assertEquals(Map.of(a, "x", b, "y"), got);
  }

  private static Map<String, String> snapshot(TableView<String> tv) {
    Map<String, String> out = new HashMap<>();
    tv.forEach(out::put);
    return out;
  }

  @Test
  void tableViewHoldsTheLatestValuePerKey() throws Exception {
    String t = topic("table-view");
    Producer<String> p = client.newProducer(Schema.STRING).topic(t).enableBatching(false).create();
    p.newMessage().key("k1").value("v1").send();
    p.newMessage().key("k2").value("v2").send();
    p.newMessage().key("k1").value("v3").send();
    TableView<String> tv = client.newTableViewBuilder(Schema.STRING).topic(t).create();
    assertEquals(Map.of("k1", "v3", "k2", "v2"), snapshot(tv));
    Map<String, String> seen = new ConcurrentHashMap<>();
    tv.forEachAndListen(seen::put);
    p.newMessage().key("k3").value("v4").send();
    p.newMessage().key("k2").value("v5").send();
    await(Duration.ofSeconds(10), "the table view to see k3 and the new k2",
        () -> "v4".equals(tv.get("k3")) && "v5".equals(tv.get("k2")));
    assertEquals(Map.of("k1", "v3", "k2", "v5", "k3", "v4"), snapshot(tv));
    await(Duration.ofSeconds(5), "the listener to see k3", () -> "v4".equals(seen.get("k3")));
    assertEquals(3, tv.size());
    tv.close();
  }

  @Test
  void transactionsAreRefusedCleanly() throws Exception {
    // This broker runs without the transaction coordinator (Pulsar's default; TransactionTest uses
    // one with it): a client with transactions enabled must fail at
    // build() (the client looks up the coordinator's topic first), quickly and with the client's
    // own "coordinator not enabled" error, not hang.
    long start = System.nanoTime();
    PulsarClientException refused =
        assertThrows(
            PulsarClientException.class,
            () -> {
              PulsarClient txnClient =
                  PulsarClient.builder()
                      .serviceUrl(serviceUrl())
                      .operationTimeout(5, TimeUnit.SECONDS)
                      .enableTransaction(true)
                      .build();
              txnClient.close();
            });
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertTrue(tookMs < 15_000, "refusal took " + tookMs + " ms");
    assertInstanceOf(TransactionCoordinatorClientException.class, refused.getCause(), refused.toString());
    assertTrue(
        refused.getMessage().contains("doesn't enable the transaction coordinator"), refused.getMessage());
    // The broker is still fine for a client without transactions.
    Producer<String> p = client.newProducer(Schema.STRING).topic(topic("after-txn")).create();
    assertNotNull(p.send("ok"));
  }
}
