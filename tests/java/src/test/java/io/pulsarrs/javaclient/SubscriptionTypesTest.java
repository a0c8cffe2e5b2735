package io.pulsarrs.javaclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.ConsumerEventListener;
import org.apache.pulsar.client.api.KeySharedPolicy;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Range;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.common.util.Murmur3_32Hash;
import org.junit.jupiter.api.Test;

/** Exclusive, Shared, Failover and Key_Shared: who receives what. */
class SubscriptionTypesTest extends PulsarTestBase {

  private Producer<byte[]> unbatched(String t) throws PulsarClientException {
    return newProducer().topic(t).enableBatching(false).create();
  }

  private static void sendN(Producer<byte[]> p, String prefix, int n) throws PulsarClientException {
    for (int i = 0; i < n; i++) {
      p.send((prefix + i).getBytes(StandardCharsets.UTF_8));
    }
  }

  @Test
  void exclusiveRefusesASecondConsumer() throws Exception {
    String t = topic("exclusive");
    Consumer<byte[]> first =
        client.newConsumer().topic(t).subscriptionName("s").subscriptionType(SubscriptionType.Exclusive).subscribe();
    assertThrows(
        PulsarClientException.ConsumerBusyException.class,
        () ->
            client.newConsumer().topic(t).subscriptionName("s").subscriptionType(SubscriptionType.Exclusive)
                .subscribe());
    // A different subscription on the same topic is fine and gets its own copy.
    Consumer<byte[]> other =
        client.newConsumer().topic(t).subscriptionName("other").subscriptionType(SubscriptionType.Exclusive)
            .subscribe();
    sendN(unbatched(t), "m", 5);
    assertEquals(range("m", 0, 5), strings(receiveAndAck(first, 5)));
    assertEquals(range("m", 0, 5), strings(receiveAndAck(other, 5)));
    // Once the first closes, the subscription takes a new exclusive consumer.
    first.close();
    Consumer<byte[]> again =
        client.newConsumer().topic(t).subscriptionName("s").subscriptionType(SubscriptionType.Exclusive).subscribe();
    assertNoMore(again, 300);
  }

  @Test
  void sharedSpreadsMessagesOverConsumersWithoutDuplicates() throws Exception {
    String t = topic("shared");
    List<Consumer<byte[]>> consumers = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      consumers.add(
          client
              .newConsumer()
              .topic(t)
              .subscriptionName("s")
              .consumerName("c" + i)
              .subscriptionType(SubscriptionType.Shared)
              .receiverQueueSize(5)
              .subscribe());
    }
    sendN(unbatched(t), "m", 100);
    Map<String, Integer> perConsumer = new HashMap<>();
    Set<String> seen = new HashSet<>();
    int total = 0;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (total < 100 && System.nanoTime() < deadline) {
      for (Consumer<byte[]> c : consumers) {
        Message<byte[]> m = c.receive(200, TimeUnit.MILLISECONDS);
        if (m != null) {
          total++;
          assertTrue(seen.add(new String(m.getData(), StandardCharsets.UTF_8)), "duplicate " + m.getMessageId());
          perConsumer.merge(c.getConsumerName(), 1, Integer::sum);
          c.acknowledge(m);
        }
      }
    }
    assertEquals(new HashSet<>(range("m", 0, 100)), seen);
    assertEquals(2, perConsumer.size(), "both consumers got messages: " + perConsumer);
    for (Consumer<byte[]> c : consumers) {
      assertNoMore(c, 200);
    }
  }

  @Test
  void failoverDeliversToOneActiveConsumerThenFailsOver() throws Exception {
    String t = topic("failover");
    Map<String, Boolean> active = new java.util.concurrent.ConcurrentHashMap<>();
    List<Consumer<byte[]>> consumers = new ArrayList<>();
    for (String name : List.of("a", "b")) {
      consumers.add(
          client
              .newConsumer()
              .topic(t)
              .subscriptionName("s")
              .consumerName(name)
              .subscriptionType(SubscriptionType.Failover)
              .consumerEventListener(
                  new ConsumerEventListener() {
                    @Override
                    public void becameActive(Consumer<?> consumer, int partitionId) {
                      active.put(name, true);
                    }

                    @Override
                    public void becameInactive(Consumer<?> consumer, int partitionId) {
                      active.put(name, false);
                    }
                  })
              .subscribe());
    }
    Producer<byte[]> producer = unbatched(t);
    sendN(producer, "m", 20);
    // Exactly one consumer gets all twenty, in order.
    Consumer<byte[]> winner = null;
    Consumer<byte[]> loser = null;
    for (int attempt = 0; attempt < 50 && winner == null; attempt++) {
      for (Consumer<byte[]> c : consumers) {
        Message<byte[]> m = c.receive(100, TimeUnit.MILLISECONDS);
        if (m != null) {
          assertEquals("m0", new String(m.getData(), StandardCharsets.UTF_8));
          c.acknowledge(m);
          winner = c;
          loser = consumers.get(1 - consumers.indexOf(c));
          break;
        }
      }
    }
    assertNotNull(winner, "no consumer received anything");
    assertEquals(range("m", 1, 20), strings(receiveAndAck(winner, 19)));
    assertNoMore(loser, 500);
    String winnerName = winner.getConsumerName();
    String loserName = loser.getConsumerName();
    await(Duration.ofSeconds(5), "ACTIVE_CONSUMER_CHANGE for both consumers", () -> active.size() == 2);
    assertEquals(Map.of(winnerName, true, loserName, false), active);
    // The active consumer leaves: the other one takes over and receives what follows.
    winner.close();
    sendN(producer, "n", 10);
    assertEquals(range("n", 0, 10), strings(receive(loser, 10, Duration.ofSeconds(10), true)));
    await(Duration.ofSeconds(5), loserName + " became active", () -> active.get(loserName));
  }

  @Test
  void keySharedKeepsEachKeyOnOneConsumerInOrder() throws Exception {
    String t = topic("key-shared");
    List<Consumer<byte[]>> consumers = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      consumers.add(
          client
              .newConsumer()
              .topic(t)
              .subscriptionName("s")
              .consumerName("c" + i)
              .subscriptionType(SubscriptionType.Key_Shared)
              .subscribe());
    }
    Producer<byte[]> producer = unbatched(t);
    int keys = 40;
    int perKey = 5;
    for (int round = 0; round < perKey; round++) {
      for (int k = 0; k < keys; k++) {
        producer.newMessage().key("key-" + k).value(("key-" + k + ":" + round).getBytes(StandardCharsets.UTF_8))
            .send();
      }
    }
    Map<String, String> owner = new HashMap<>();
    Map<String, List<Integer>> rounds = new HashMap<>();
    Map<String, Integer> perConsumer = new HashMap<>();
    int total = 0;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (total < keys * perKey && System.nanoTime() < deadline) {
      for (Consumer<byte[]> c : consumers) {
        Message<byte[]> m = c.receive(100, TimeUnit.MILLISECONDS);
        if (m == null) {
          continue;
        }
        total++;
        String key = m.getKey();
        String prev = owner.putIfAbsent(key, c.getConsumerName());
        assertTrue(prev == null || prev.equals(c.getConsumerName()), key + " went to " + prev + " and " + c);
        String[] parts = new String(m.getData(), StandardCharsets.UTF_8).split(":");
        assertEquals(key, parts[0]);
        rounds.computeIfAbsent(key, x -> new ArrayList<>()).add(Integer.parseInt(parts[1]));
        perConsumer.merge(c.getConsumerName(), 1, Integer::sum);
        c.acknowledge(m);
      }
    }
    assertEquals(keys * perKey, total);
    for (Map.Entry<String, List<Integer>> e : rounds.entrySet()) {
      assertEquals(List.of(0, 1, 2, 3, 4), e.getValue(), "order of " + e.getKey());
    }
    assertEquals(2, perConsumer.size(), "40 keys should spread over both consumers: " + perConsumer);
  }

  @Test
  void keySharedStickyRangesDecideTheConsumer() throws Exception {
    String t = topic("key-shared-sticky");
    Consumer<byte[]> low =
        client
            .newConsumer()
            .topic(t)
            .subscriptionName("s")
            .consumerName("low")
            .subscriptionType(SubscriptionType.Key_Shared)
            .keySharedPolicy(KeySharedPolicy.stickyHashRange().ranges(Range.of(0, 32767)))
            .subscribe();
    Consumer<byte[]> high =
        client
            .newConsumer()
            .topic(t)
            .subscriptionName("s")
            .consumerName("high")
            .subscriptionType(SubscriptionType.Key_Shared)
            .keySharedPolicy(KeySharedPolicy.stickyHashRange().ranges(Range.of(32768, 65535)))
            .subscribe();
    Producer<byte[]> producer = unbatched(t);
    Set<String> expectLow = new HashSet<>();
    Set<String> expectHigh = new HashSet<>();
    for (int k = 0; k < 30; k++) {
      String key = "key-" + k;
      int slot = Murmur3_32Hash.getInstance().makeHash(key.getBytes(StandardCharsets.UTF_8)) % 65536;
      (slot <= 32767 ? expectLow : expectHigh).add(key);
      producer.newMessage().key(key).value(key.getBytes(StandardCharsets.UTF_8)).send();
    }
    Set<String> gotLow = new HashSet<>(strings(receiveAndAck(low, expectLow.size())));
    Set<String> gotHigh = new HashSet<>(strings(receiveAndAck(high, expectHigh.size())));
    assertEquals(expectLow, gotLow);
    assertEquals(expectHigh, gotHigh);
    assertNoMore(low, 300);
    assertNoMore(high, 300);
  }

  @Test
  void keySharedStickyOverlappingRangeIsRefused() throws Exception {
    String t = topic("key-shared-overlap");
    client
        .newConsumer()
        .topic(t)
        .subscriptionName("s")
        .subscriptionType(SubscriptionType.Key_Shared)
        .keySharedPolicy(KeySharedPolicy.stickyHashRange().ranges(Range.of(0, 1000)))
        .subscribe();
    PulsarClientException e =
        assertThrows(
            PulsarClientException.class,
            () ->
                client
                    .newConsumer()
                    .topic(t)
                    .subscriptionName("s")
                    .subscriptionType(SubscriptionType.Key_Shared)
                    .keySharedPolicy(KeySharedPolicy.stickyHashRange().ranges(Range.of(500, 2000)))
                    .subscribe());
    assertTrue(String.valueOf(e.getMessage()).toLowerCase().contains("range"), e.toString());
  }
}
