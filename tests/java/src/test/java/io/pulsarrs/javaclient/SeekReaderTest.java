package io.pulsarrs.javaclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.TopicMessageId;
import org.junit.jupiter.api.Test;

/** Seek by id and by time, Reader, hasMessageAvailable, getLastMessageIds. */
class SeekReaderTest extends PulsarTestBase {

  private List<MessageId> sendN(String t, int n) throws Exception {
    List<MessageId> ids = new ArrayList<>();
    try (Producer<byte[]> p = newProducer().topic(t).enableBatching(false).create()) {
      for (int i = 0; i < n; i++) {
        ids.add(p.send(("m" + i).getBytes(StandardCharsets.UTF_8)));
      }
    }
    return ids;
  }

  private static List<String> readAll(Reader<byte[]> r, int max) throws Exception {
    List<String> out = new ArrayList<>();
    while (out.size() < max) {
      Message<byte[]> m = r.readNext(2, TimeUnit.SECONDS);
      if (m == null) {
        break;
      }
      out.add(new String(m.getData(), StandardCharsets.UTF_8));
    }
    return out;
  }

  @Test
  void readerFromEarliestLatestAndAnId() throws Exception {
    String t = topic("reader");
    List<MessageId> ids = sendN(t, 10);
    try (Reader<byte[]> r = client.newReader().topic(t).startMessageId(MessageId.earliest).create()) {
      assertTrue(r.hasMessageAvailable());
      assertEquals(range("m", 0, 10), readAll(r, 10));
      assertFalse(r.hasMessageAvailable());
    }
    try (Reader<byte[]> r = client.newReader().topic(t).startMessageId(ids.get(4)).create()) {
      assertEquals(range("m", 5, 10), readAll(r, 10), "exclusive start");
    }
    try (Reader<byte[]> r =
        client.newReader().topic(t).startMessageId(ids.get(4)).startMessageIdInclusive().create()) {
      assertEquals(range("m", 4, 10), readAll(r, 10), "inclusive start");
    }
    try (Reader<byte[]> r = client.newReader().topic(t).startMessageId(MessageId.latest).create()) {
      assertFalse(r.hasMessageAvailable());
      assertNull(r.readNext(300, TimeUnit.MILLISECONDS));
      sendN(t, 1);
      Message<byte[]> m = r.readNext(5, TimeUnit.SECONDS);
      assertEquals("m0", new String(m.getData(), StandardCharsets.UTF_8));
    }
    // A reader leaves no durable subscription behind.
    assertEquals(List.of(), admin.topics().getSubscriptions(t));
  }

  @Test
  void readerStartingFromLatestInclusiveReadsTheLastMessage() throws Exception {
    String t = topic("reader-latest-inclusive");
    sendN(t, 3);
    try (Reader<byte[]> r =
        client.newReader().topic(t).startMessageId(MessageId.latest).startMessageIdInclusive().create()) {
      assertTrue(r.hasMessageAvailable());
      assertEquals(List.of("m2"), readAll(r, 5));
    }
  }

  @Test
  void readerSeekByIdAndTime() throws Exception {
    String t = topic("reader-seek");
    List<MessageId> ids = sendN(t, 5);
    // A seek by time includes messages published in that very millisecond: step past m4's.
    Thread.sleep(20);
    long afterFirst = System.currentTimeMillis();
    Thread.sleep(50);
    try (Producer<byte[]> p = newProducer().topic(t).enableBatching(false).create()) {
      for (int i = 5; i < 8; i++) {
        p.send(("m" + i).getBytes(StandardCharsets.UTF_8));
      }
    }
    try (Reader<byte[]> r = client.newReader().topic(t).startMessageId(MessageId.earliest).create()) {
      assertEquals(range("m", 0, 8), readAll(r, 8));
      r.seek(ids.get(1));
      assertEquals(range("m", 2, 8), readAll(r, 8), "after seek to m1's id");
      r.seek(afterFirst);
      assertEquals(range("m", 5, 8), readAll(r, 8), "after seek to a time");
      r.seek(MessageId.earliest);
      assertEquals(range("m", 0, 8), readAll(r, 8), "after seek to earliest");
    }
  }

  @Test
  void consumerSeekRewindsTheSubscription() throws Exception {
    String t = topic("consumer-seek");
    Consumer<byte[]> c = client.newConsumer().topic(t).subscriptionName("s").subscribe();
    List<MessageId> ids = sendN(t, 6);
    assertEquals(range("m", 0, 6), strings(receiveAndAck(c, 6)));
    awaitBacklog(t, "s", 0);
    c.seek(ids.get(2));
    assertEquals(range("m", 3, 6), strings(receiveAndAck(c, 6)));
    c.seek(MessageId.earliest);
    assertEquals(range("m", 0, 6), strings(receiveAndAck(c, 6)));
    c.seek(System.currentTimeMillis() + 60_000);
    assertNoMore(c, 500);
  }

  @Test
  void getLastMessageIdsAnswersTheLastPublishedId() throws Exception {
    String t = topic("last-ids");
    Consumer<byte[]> c = client.newConsumer().topic(t).subscriptionName("s").subscribe();
    List<MessageId> ids = sendN(t, 4);
    List<TopicMessageId> last = c.getLastMessageIds();
    assertEquals(1, last.size());
    TopicMessageId id = last.get(0);
    assertEquals(t, id.getOwnerTopic());
    MessageIdAdv expected = (MessageIdAdv) ids.get(3);
    MessageIdAdv actual = (MessageIdAdv) id;
    assertEquals(expected.getLedgerId(), actual.getLedgerId());
    assertEquals(expected.getEntryId(), actual.getEntryId());
    assertEquals(0, id.compareTo(ids.get(3)));
  }

  @Test
  void getLastMessageIdsOfABatch() throws Exception {
    String t = topic("last-ids-batch");
    Consumer<byte[]> c = client.newConsumer().topic(t).subscriptionName("s").subscribe();
    Producer<byte[]> p =
        newProducer().topic(t).batchingMaxMessages(3).batchingMaxPublishDelay(5, TimeUnit.SECONDS).create();
    List<java.util.concurrent.CompletableFuture<MessageId>> fs = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      fs.add(p.sendAsync(("m" + i).getBytes(StandardCharsets.UTF_8)));
    }
    p.flush();
    MessageIdAdv lastSent = (MessageIdAdv) fs.get(2).get(5, TimeUnit.SECONDS);
    MessageIdAdv last = (MessageIdAdv) c.getLastMessageIds().get(0);
    assertEquals(lastSent.getLedgerId(), last.getLedgerId());
    assertEquals(lastSent.getEntryId(), last.getEntryId());
    assertEquals(2, last.getBatchIndex(), "the last message of the batch: " + last);
  }

  @Test
  void getLastMessageIdsOnAnEmptyTopic() throws Exception {
    String t = topic("last-ids-empty");
    Consumer<byte[]> c = client.newConsumer().topic(t).subscriptionName("s").subscribe();
    MessageIdAdv last = (MessageIdAdv) c.getLastMessageIds().get(0);
    assertEquals(-1, last.getEntryId(), "no entry yet: " + last);
  }
}
