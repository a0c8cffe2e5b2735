package io.pulsarrs.javaclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.api.transaction.Transaction;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Transactions with the official Java client ({@code enableTransaction(true)}) against the broker
 * named by {@code pulsar.txnServiceUrl} / {@code pulsar.txnAdminUrl}, which runs with {@code
 * transactionCoordinatorEnabled=true} (the other tests' broker keeps Pulsar's default, off).
 * Producers disable batching and the send timeout.
 */
class TransactionTest extends PulsarTestBase {
  private PulsarClient txnClient;

  @BeforeEach
  void openTxnClient() throws Exception {
    txnClient =
        PulsarClient.builder()
            .serviceUrl(required("pulsar.txnServiceUrl"))
            .operationTimeout(10, TimeUnit.SECONDS)
            .enableTransaction(true)
            .build();
    client = txnClient; // closed after the test, as the base's own client (PulsarTestBase#closeClients)
    admin.close();
    admin = PulsarAdmin.builder().serviceHttpUrl(required("pulsar.txnAdminUrl")).build();
  }

  private Transaction newTxn(long timeoutSeconds) throws Exception {
    return txnClient
        .newTransaction()
        .withTransactionTimeout(timeoutSeconds, TimeUnit.SECONDS)
        .build()
        .get(10, TimeUnit.SECONDS);
  }

  private Producer<byte[]> producer(String topic) throws Exception {
    return newProducer()
        .topic(topic)
        .enableBatching(false)
        .sendTimeout(0, TimeUnit.SECONDS)
        .create();
  }

  private Consumer<byte[]> consumer(String topic, String sub, SubscriptionType type) throws Exception {
    return txnClient
        .newConsumer()
        .topic(topic)
        .subscriptionName(sub)
        .subscriptionType(type)
        .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
        .subscribe();
  }

  /** Four messages in one batch entry: b0..b3. */
  private List<Message<byte[]>> oneBatchOfFour(String topic, Consumer<byte[]> c) throws Exception {
    try (Producer<byte[]> p =
        newProducer()
            .topic(topic)
            .enableBatching(true)
            .batchingMaxMessages(4)
            .batchingMaxPublishDelay(10, TimeUnit.SECONDS)
            .sendTimeout(0, TimeUnit.SECONDS)
            .create()) {
      var sent = new ArrayList<java.util.concurrent.CompletableFuture<?>>();
      for (int i = 0; i < 4; i++) {
        sent.add(p.sendAsync(("b" + i).getBytes()));
      }
      p.flush();
      for (var f : sent) {
        f.get(10, TimeUnit.SECONDS);
      }
    }
    List<Message<byte[]>> ms = receive(c, 4, Duration.ofSeconds(5), false);
    assertEquals(range("b", 0, 4), strings(ms));
    MessageIdAdv first = (MessageIdAdv) ms.get(0).getMessageId();
    for (int i = 0; i < 4; i++) {
      MessageIdAdv id = (MessageIdAdv) ms.get(i).getMessageId();
      assertEquals(first.getEntryId(), id.getEntryId(), "one entry");
      assertEquals(i, id.getBatchIndex());
    }
    return ms;
  }

  private static void sendTxn(Producer<byte[]> p, Transaction txn, String value) throws Exception {
    p.newMessage(txn).value(value.getBytes()).sendAsync().get(10, TimeUnit.SECONDS);
  }

  private static List<String> drain(Consumer<byte[]> c, int max, int waitMs) throws Exception {
    return strings(receive(c, max, Duration.ofMillis(waitMs), true));
  }

  @Test
  void commitMakesEveryMessageVisibleAtOnceAcrossTopics() throws Exception {
    String t1 = topic("txn-commit-a");
    String t2 = topic("txn-commit-b");
    try (Consumer<byte[]> c1 = consumer(t1, "s", SubscriptionType.Exclusive);
        Consumer<byte[]> c2 = consumer(t2, "s", SubscriptionType.Exclusive);
        Producer<byte[]> p1 = producer(t1);
        Producer<byte[]> p2 = producer(t2)) {
      Transaction txn = newTxn(30);
      for (int i = 0; i < 3; i++) {
        sendTxn(p1, txn, "a" + i);
        sendTxn(p2, txn, "b" + i);
      }
      assertNoMore(c1, 500);
      assertNoMore(c2, 100);
      txn.commit().get(10, TimeUnit.SECONDS);
      assertEquals(range("a", 0, 3), drain(c1, 3, 5000));
      assertEquals(range("b", 0, 3), drain(c2, 3, 5000));
      assertNoMore(c1, 300);
    }
  }

  @Test
  void abortShowsNoneAndOrderFollowsTheLedger() throws Exception {
    String t = topic("txn-abort");
    try (Consumer<byte[]> c = consumer(t, "s", SubscriptionType.Shared);
        Producer<byte[]> p = producer(t)) {
      p.send("m1".getBytes());
      Transaction aborted = newTxn(30);
      sendTxn(p, aborted, "x1");
      Transaction committed = newTxn(30);
      sendTxn(p, committed, "t1");
      p.send("m2".getBytes());
      // Only what precedes the first open transaction is dispatched.
      assertEquals(List.of("m1"), drain(c, 10, 700));
      aborted.abort().get(10, TimeUnit.SECONDS);
      assertNoMore(c, 500);
      committed.commit().get(10, TimeUnit.SECONDS);
      // Ledger order, not commit order; aborted messages and markers never show.
      assertEquals(List.of("t1", "m2"), drain(c, 10, 2000));
      p.send("m3".getBytes());
      assertEquals(List.of("m3"), drain(c, 10, 2000));
    }
    // A new subscription from the start sees the same.
    try (Consumer<byte[]> c = consumer(t, "late", SubscriptionType.Exclusive)) {
      assertEquals(List.of("m1", "t1", "m2", "m3"), drain(c, 10, 2000));
    }
  }

  @Test
  void consumeTransformProduceIsExactlyOnce() throws Exception {
    String in = topic("txn-ctp-in");
    String out = topic("txn-ctp-out");
    try (Producer<byte[]> source = producer(in);
        Consumer<byte[]> worker = consumer(in, "worker", SubscriptionType.Shared);
        Producer<byte[]> sink = producer(out);
        Consumer<byte[]> reader = consumer(out, "check", SubscriptionType.Exclusive)) {
      for (int i = 0; i < 4; i++) {
        source.send(("in" + i).getBytes());
      }
      // Round 1 aborts: nothing produced, the inputs come back.
      Transaction txn = newTxn(30);
      List<Message<byte[]>> got = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        Message<byte[]> m = worker.receive(5, TimeUnit.SECONDS);
        assertTrue(m != null, "input " + i + " not received");
        got.add(m);
        sendTxn(sink, txn, "out-" + new String(m.getData()));
        worker.acknowledgeAsync(m.getMessageId(), txn).get(10, TimeUnit.SECONDS);
      }
      assertNoMore(worker, 300);
      txn.abort().get(10, TimeUnit.SECONDS);
      assertNoMore(reader, 500);
      // Round 2 commits.
      Transaction txn2 = newTxn(30);
      List<String> inputs = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        Message<byte[]> m = worker.receive(5, TimeUnit.SECONDS);
        assertTrue(m != null, "redelivered input " + i + " not received");
        inputs.add(new String(m.getData()));
        sendTxn(sink, txn2, "out-" + new String(m.getData()));
        worker.acknowledgeAsync(m.getMessageId(), txn2).get(10, TimeUnit.SECONDS);
      }
      inputs.sort(null);
      assertEquals(range("in", 0, 4), inputs);
      txn2.commit().get(10, TimeUnit.SECONDS);
      List<String> outs = drain(reader, 10, 2000);
      outs.sort(null);
      assertEquals(range("out-in", 0, 4), outs);
      awaitBacklog(in, "worker", 0);
    }
  }

  @Test
  void timeoutAbortsTheTransaction() throws Exception {
    String t = topic("txn-timeout");
    try (Consumer<byte[]> c = consumer(t, "s", SubscriptionType.Exclusive);
        Producer<byte[]> p = producer(t)) {
      Transaction txn = newTxn(2);
      sendTxn(p, txn, "late");
      p.send("after".getBytes());
      assertNoMore(c, 500);
      // The coordinator aborts it after its 2 s: the blocked message after it flows.
      assertEquals(List.of("after"), drain(c, 10, 5000));
      // Refused by the client (TIME_OUT) or the coordinator (the transaction has ended).
      assertThrows(ExecutionException.class, () -> txn.commit().get(10, TimeUnit.SECONDS));
      assertNoMore(c, 300);
    }
  }

  @Test
  void conflictingTransactionalAcksAreRefused() throws Exception {
    String t = topic("txn-conflict");
    try (Consumer<byte[]> c = consumer(t, "s", SubscriptionType.Shared);
        Producer<byte[]> p = producer(t)) {
      p.send("m".getBytes());
      Message<byte[]> m = c.receive(5, TimeUnit.SECONDS);
      Transaction a = newTxn(30);
      Transaction b = newTxn(30);
      c.acknowledgeAsync(m.getMessageId(), a).get(10, TimeUnit.SECONDS);
      ExecutionException e =
          assertThrows(
              ExecutionException.class,
              () -> c.acknowledgeAsync(m.getMessageId(), b).get(10, TimeUnit.SECONDS));
      assertInstanceOf(PulsarClientException.TransactionConflictException.class, e.getCause());
      a.commit().get(10, TimeUnit.SECONDS);
      b.abort().get(10, TimeUnit.SECONDS);
      // Acked by the committed transaction: an ack in a third one conflicts too.
      Transaction d = newTxn(30);
      ExecutionException again =
          assertThrows(
              ExecutionException.class,
              () -> c.acknowledgeAsync(m.getMessageId(), d).get(10, TimeUnit.SECONDS));
      assertInstanceOf(PulsarClientException.TransactionConflictException.class, again.getCause());
      d.abort().get(10, TimeUnit.SECONDS);
      awaitBacklog(t, "s", 0);
    }
  }

  @Test
  void commitAfterAbortIsRefused() throws Exception {
    Transaction txn = newTxn(30);
    txn.abort().get(10, TimeUnit.SECONDS);
    assertThrows(ExecutionException.class, () -> txn.commit().get(10, TimeUnit.SECONDS));
  }

  @Test
  void nonTransactionalReaderNeverSeesMarkersOrUncommitted() throws Exception {
    String t = topic("txn-plain-reader");
    try (Producer<byte[]> p = producer(t)) {
      Transaction c1 = newTxn(30);
      sendTxn(p, c1, "c1");
      c1.commit().get(10, TimeUnit.SECONDS);
      Transaction a1 = newTxn(30);
      sendTxn(p, a1, "a1");
      a1.abort().get(10, TimeUnit.SECONDS);
      Transaction open = newTxn(30);
      sendTxn(p, open, "open");
      PulsarClient plain =
          PulsarClient.builder()
              .serviceUrl(required("pulsar.txnServiceUrl"))
              .operationTimeout(10, TimeUnit.SECONDS)
              .build();
      try (Consumer<byte[]> c =
          plain
              .newConsumer(Schema.BYTES)
              .topic(t)
              .subscriptionName("plain")
              .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
              .subscribe()) {
        assertEquals(List.of("c1"), drain(c, 10, 1500));
      } finally {
        plain.close();
      }
      open.abort().get(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void cumulativeAckInTransactionOnExclusive() throws Exception {
    String t = topic("txn-cumulative");
    try (Consumer<byte[]> c = consumer(t, "s", SubscriptionType.Exclusive);
        Producer<byte[]> p = producer(t)) {
      for (int i = 0; i < 3; i++) {
        p.send(("m" + i).getBytes());
      }
      Message<byte[]> last = null;
      for (int i = 0; i < 3; i++) {
        last = c.receive(5, TimeUnit.SECONDS);
      }
      Transaction txn = newTxn(30);
      c.acknowledgeCumulativeAsync(last.getMessageId(), txn).get(10, TimeUnit.SECONDS);
      assertEquals(3, backlog(t, "s"));
      txn.commit().get(10, TimeUnit.SECONDS);
      awaitBacklog(t, "s", 0);
    }
  }

  @Test
  void adminShowsTheCoordinatorTheTransactionAndTheBuffer() throws Exception {
    String t = topic("txn-admin");
    try (Producer<byte[]> p = producer(t)) {
      Transaction txn = newTxn(30);
      sendTxn(p, txn, "v");
      var stats = admin.transactions().getCoordinatorStats();
      assertEquals(1, stats.size(), stats.toString());
      assertTrue(stats.get(0).ongoingTxnSize >= 1, stats.toString());
      var meta = admin.transactions().getTransactionMetadata(txn.getTxnID());
      assertEquals("OPEN", meta.status);
      assertTrue(meta.producedPartitions.containsKey(t), meta.producedPartitions.toString());
      assertEquals(false, meta.producedPartitions.get(t).aborted);
      var buffer = admin.transactions().getTransactionBufferStats(t);
      assertEquals(1, buffer.ongoingTxnSize);
      txn.abort().get(10, TimeUnit.SECONDS);
      assertEquals(0, admin.transactions().getTransactionBufferStats(t).ongoingTxnSize);
    }
  }

  @Test
  void aConsumerCrashInTheMiddleOfATransactionLosesAndDuplicatesNothing() throws Exception {
    String in = topic("txn-crash-in");
    String out = topic("txn-crash-out");
    try (Producer<byte[]> source = producer(in);
        Producer<byte[]> sink = producer(out);
        Consumer<byte[]> reader = consumer(out, "check", SubscriptionType.Exclusive)) {
      for (int i = 0; i < 3; i++) {
        source.send(("in" + i).getBytes());
      }
      // The first worker processes two inputs in a transaction, then dies before committing.
      Consumer<byte[]> first = consumer(in, "worker", SubscriptionType.Shared);
      Transaction doomed = newTxn(30);
      for (int i = 0; i < 2; i++) {
        Message<byte[]> m = first.receive(5, TimeUnit.SECONDS);
        sendTxn(sink, doomed, "out-" + new String(m.getData()));
        first.acknowledgeAsync(m.getMessageId(), doomed).get(10, TimeUnit.SECONDS);
      }
      first.close();
      doomed.abort().get(10, TimeUnit.SECONDS);
      // Its replacement gets every input once and commits.
      try (Consumer<byte[]> second = consumer(in, "worker", SubscriptionType.Shared)) {
        Transaction txn = newTxn(30);
        List<String> inputs = new ArrayList<>();
        Message<byte[]> m;
        while ((m = second.receive(2, TimeUnit.SECONDS)) != null) {
          inputs.add(new String(m.getData()));
          sendTxn(sink, txn, "out-" + new String(m.getData()));
          second.acknowledgeAsync(m.getMessageId(), txn).get(10, TimeUnit.SECONDS);
        }
        inputs.sort(null);
        assertEquals(range("in", 0, 3), inputs);
        txn.commit().get(10, TimeUnit.SECONDS);
      }
      List<String> outs = drain(reader, 10, 2000);
      outs.sort(null);
      assertEquals(range("out-in", 0, 3), outs);
      awaitBacklog(in, "worker", 0);
    }
  }

  @Test
  void batchIndexAcksInTransactionsHoldOnlyTheirMessages() throws Exception {
    String t = topic("txn-batch-index");
    Consumer<byte[]> c = consumer(t, "s", SubscriptionType.Shared);
    List<Message<byte[]>> ms = oneBatchOfFour(t, c);
    Transaction a = newTxn(30);
    Transaction b = newTxn(30);
    c.acknowledgeAsync(ms.get(0).getMessageId(), a).get(10, TimeUnit.SECONDS);
    c.acknowledgeAsync(ms.get(1).getMessageId(), a).get(10, TimeUnit.SECONDS);
    c.acknowledgeAsync(ms.get(2).getMessageId(), b).get(10, TimeUnit.SECONDS);
    // A message of the batch another transaction holds: a conflict, as Pulsar's.
    ExecutionException e =
        assertThrows(
            ExecutionException.class,
            () -> c.acknowledgeAsync(ms.get(1).getMessageId(), b).get(10, TimeUnit.SECONDS));
    assertInstanceOf(PulsarClientException.TransactionConflictException.class, e.getCause());
    a.commit().get(10, TimeUnit.SECONDS);
    b.abort().get(10, TimeUnit.SECONDS);
    c.close();
    // What a committed: gone; what b held (aborted) and what nobody acknowledged: delivered.
    try (Consumer<byte[]> again = consumer(t, "s", SubscriptionType.Shared)) {
      List<String> left = drain(again, 10, 2000);
      left.sort(null);
      assertEquals(List.of("b2", "b3"), left);
      awaitBacklog(t, "s", 0);
    }
  }

  @Test
  void cumulativeAckInTransactionInsideABatchKeepsTheBatchsLaterMessages() throws Exception {
    String t = topic("txn-batch-cumulative");
    Consumer<byte[]> c = consumer(t, "s", SubscriptionType.Exclusive);
    List<Message<byte[]>> ms = oneBatchOfFour(t, c);
    Transaction txn = newTxn(30);
    c.acknowledgeCumulativeAsync(ms.get(1).getMessageId(), txn).get(10, TimeUnit.SECONDS);
    txn.commit().get(10, TimeUnit.SECONDS);
    c.close();
    try (Consumer<byte[]> again = consumer(t, "s", SubscriptionType.Exclusive)) {
      assertEquals(List.of("b2", "b3"), drain(again, 10, 2000));
      awaitBacklog(t, "s", 0);
    }
  }
}
