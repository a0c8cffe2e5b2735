package io.pulsarrs.javaclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.DeadLetterPolicy;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.api.ConsumerBuilder;
import org.junit.jupiter.api.Test;

/** Acknowledgement: individual, cumulative, negative, ack timeout, dead letters, receipts, batch index acks. */
class AckTest extends PulsarTestBase {

  private void sendN(String t, String prefix, int n) throws PulsarClientException {
    try (Producer<byte[]> p = newProducer().topic(t).enableBatching(false).create()) {
      for (int i = 0; i < n; i++) {
        p.send((prefix + i).getBytes(StandardCharsets.UTF_8));
      }
    }
  }

  private ConsumerBuilder<byte[]> shared(String t) {
    return client.newConsumer().topic(t).subscriptionName("s").subscriptionType(SubscriptionType.Shared);
  }

  @Test
  void unackedMessagesComeBackToTheNextConsumer() throws Exception {
    String t = topic("unacked");
    Consumer<byte[]> c = shared(t).acknowledgmentGroupTime(0, TimeUnit.MILLISECONDS).subscribe();
    sendN(t, "m", 6);
    List<Message<byte[]>> got = receive(c, 6, Duration.ofSeconds(5), false);
    assertEquals(6, got.size());
    for (int i = 0; i < 6; i += 2) {
      c.acknowledge(got.get(i));
    }
    c.close();
    Consumer<byte[]> again = shared(t).subscribe();
    List<Message<byte[]>> redelivered = receiveAndAck(again, 3);
    assertEquals(List.of("m1", "m3", "m5"), strings(redelivered));
    for (Message<byte[]> m : redelivered) {
      assertTrue(m.getRedeliveryCount() >= 0);
    }
    assertNoMore(again, 300);
    awaitBacklog(t, "s", 0);
  }

  @Test
  void cumulativeAckOnExclusive() throws Exception {
    String t = topic("cumulative");
    Consumer<byte[]> c =
        client.newConsumer().topic(t).subscriptionName("s").acknowledgmentGroupTime(0, TimeUnit.MILLISECONDS)
            .subscribe();
    sendN(t, "m", 10);
    List<Message<byte[]>> got = receive(c, 10, Duration.ofSeconds(5), false);
    assertEquals(10, got.size());
    c.acknowledgeCumulative(got.get(4));
    c.close();
    Consumer<byte[]> again = client.newConsumer().topic(t).subscriptionName("s").subscribe();
    assertEquals(range("m", 5, 10), strings(receiveAndAck(again, 5)));
    assertNoMore(again, 300);
  }

  @Test
  void negativeAckRedeliversWithGrowingRedeliveryCount() throws Exception {
    String t = topic("nack");
    Consumer<byte[]> c = shared(t).negativeAckRedeliveryDelay(100, TimeUnit.MILLISECONDS).subscribe();
    sendN(t, "m", 1);
    List<Integer> counts = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Message<byte[]> m = c.receive(5, TimeUnit.SECONDS);
      assertNotNull(m, "delivery " + i);
      assertEquals("m0", new String(m.getData(), StandardCharsets.UTF_8));
      counts.add(m.getRedeliveryCount());
      if (i < 2) {
        c.negativeAcknowledge(m);
      } else {
        c.acknowledge(m);
      }
    }
    assertEquals(List.of(0, 1, 2), counts);
    assertNoMore(c, 500);
  }

  @Test
  void ackTimeoutRedeliversUnackedMessages() throws Exception {
    String t = topic("ack-timeout");
    Consumer<byte[]> c =
        shared(t).ackTimeout(1, TimeUnit.SECONDS).ackTimeoutTickTime(100, TimeUnit.MILLISECONDS).subscribe();
    sendN(t, "m", 2);
    Message<byte[]> m0 = c.receive(5, TimeUnit.SECONDS);
    Message<byte[]> m1 = c.receive(5, TimeUnit.SECONDS);
    assertEquals(List.of("m0", "m1"), strings(List.of(m0, m1)));
    c.acknowledge(m0);
    long start = System.nanoTime();
    Message<byte[]> again = c.receive(5, TimeUnit.SECONDS);
    long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertNotNull(again, "m1 was not redelivered after the ack timeout");
    assertEquals("m1", new String(again.getData(), StandardCharsets.UTF_8));
    assertEquals(1, again.getRedeliveryCount());
    assertTrue(waited >= 500, "redelivered after only " + waited + " ms");
    c.acknowledge(again);
    assertNoMore(c, 1500);
  }

  @Test
  void deadLetterPolicyMovesMessagesAfterMaxRedeliveries() throws Exception {
    // A typed consumer: the client's dead letter producer takes the consumer's schema, and a
    // producer without one is not created on pulsar-rs (ProduceConsumeTest#producerWithoutSchema).
    String t = topic("dlq");
    String dlq = t + "-my-dlq";
    Consumer<String> dead =
        client.newConsumer(Schema.STRING).topic(dlq).subscriptionName("dlq-reader")
            .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
    Consumer<String> c =
        client
            .newConsumer(Schema.STRING)
            .topic(t)
            .subscriptionName("s")
            .subscriptionType(SubscriptionType.Shared)
            .negativeAckRedeliveryDelay(100, TimeUnit.MILLISECONDS)
            .deadLetterPolicy(DeadLetterPolicy.builder().maxRedeliverCount(2).deadLetterTopic(dlq).build())
            .subscribe();
    sendN(t, "m", 3);
    Map<String, List<Integer>> seen = new HashMap<>();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (System.nanoTime() < deadline) {
      Message<String> m = c.receive(1, TimeUnit.SECONDS);
      if (m == null) {
        if (seen.values().stream().mapToInt(List::size).sum() >= 9) {
          break;
        }
        continue;
      }
      seen.computeIfAbsent(m.getValue(), k -> new ArrayList<>()).add(m.getRedeliveryCount());
      c.negativeAcknowledge(m);
    }
    for (String k : range("m", 0, 3)) {
      assertEquals(List.of(0, 1, 2), seen.get(k), "deliveries of " + k + ": " + seen);
    }
    List<Message<String>> dl = receiveAndAck(dead, 3);
    assertEquals(List.of("m0", "m1", "m2"), strings(dl).stream().sorted().toList());
    for (Message<String> m : dl) {
      assertEquals(t, m.getProperty("REAL_TOPIC"), "DLQ message properties: " + m.getProperties());
    }
    assertNoMore(c, 500);
    awaitBacklog(t, "s", 0);
  }

  @Test
  void ackReceiptsComplete() throws Exception {
    String t = topic("ack-receipt");
    Consumer<byte[]> c = shared(t).isAckReceiptEnabled(true).subscribe();
    sendN(t, "m", 5);
    List<Message<byte[]>> got = receive(c, 5, Duration.ofSeconds(5), false);
    assertEquals(5, got.size());
    List<CompletableFuture<Void>> acks = new ArrayList<>();
    for (Message<byte[]> m : got) {
      acks.add(c.acknowledgeAsync(m));
    }
    CompletableFuture.allOf(acks.toArray(new CompletableFuture[0])).get(10, TimeUnit.SECONDS);
    for (CompletableFuture<Void> f : acks) {
      assertTrue(f.isDone() && !f.isCompletedExceptionally());
    }
    // Acknowledged on the broker: nothing is redelivered to the next consumer, the backlog is 0.
    assertEquals(0, admin.topics().getStats(t).getSubscriptions().get("s").getMsgBacklog());
    c.close();
    Consumer<byte[]> again = shared(t).subscribe();
    assertNoMore(again, 500);
  }

  @Test
  void ackReceiptForCumulativeAck() throws Exception {
    String t = topic("ack-receipt-cumulative");
    Consumer<byte[]> c = client.newConsumer().topic(t).subscriptionName("s").isAckReceiptEnabled(true).subscribe();
    sendN(t, "m", 4);
    List<Message<byte[]>> got = receive(c, 4, Duration.ofSeconds(5), false);
    c.acknowledgeCumulativeAsync(got.get(3)).get(10, TimeUnit.SECONDS);
    awaitBacklog(t, "s", 0);
  }

  @Test
  void batchIndexAcknowledgmentRedeliversOnlyUnackedMessagesOfABatch() throws Exception {
    String t = topic("batch-index-ack");
    ConsumerBuilder<byte[]> builder =
        shared(t).enableBatchIndexAcknowledgment(true).acknowledgmentGroupTime(0, TimeUnit.MILLISECONDS);
    Consumer<byte[]> c = builder.clone().subscribe();
    Producer<byte[]> p =
        newProducer().topic(t).batchingMaxMessages(10).batchingMaxPublishDelay(5, TimeUnit.SECONDS).create();
    List<CompletableFuture<MessageId>> sent = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      sent.add(p.sendAsync(("m" + i).getBytes(StandardCharsets.UTF_8)));
    }
    p.flush();
    CompletableFuture.allOf(sent.toArray(new CompletableFuture[0])).get(10, TimeUnit.SECONDS);
    List<Message<byte[]>> got = receive(c, 10, Duration.ofSeconds(5), false);
    assertEquals(10, got.size());
    assertEquals(10, ((MessageIdAdv) got.get(0).getMessageId()).getBatchSize(), "one batch of ten");
    for (int i = 0; i < 10; i += 2) {
      c.acknowledge(got.get(i));
    }
    c.close();
    Consumer<byte[]> again = builder.clone().subscribe();
    List<Message<byte[]>> redelivered = receiveAndAck(again, 5);
    assertEquals(List.of("m1", "m3", "m5", "m7", "m9"), strings(redelivered));
    assertNoMore(again, 500);
    // The batch's acks are stored on the cursor: the backlog counts what is left.
    awaitBacklog(t, "s", 0);
  }
}
