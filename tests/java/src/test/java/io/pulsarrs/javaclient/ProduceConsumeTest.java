package io.pulsarrs.javaclient;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.CompressionType;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.common.policies.data.PersistentTopicInternalStats;
import org.apache.pulsar.common.policies.data.TopicStats;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Produce and consume: payload, key, properties, event time, batching on and off, compression, chunking. */
class ProduceConsumeTest extends PulsarTestBase {

  @Test
  void sendAndReceiveKeepsPayloadKeyPropertiesAndEventTime() throws Exception {
    String t = topic("basic");
    Consumer<byte[]> consumer = client.newConsumer().topic(t).subscriptionName("s").subscribe();
    Producer<byte[]> producer = newProducer().topic(t).producerName("basic-producer").create();
    long before = System.currentTimeMillis();
    MessageId sent =
        producer
            .newMessage()
            .key("k1")
            .value("hello".getBytes(StandardCharsets.UTF_8))
            .property("a", "1")
            .property("b", "2")
            .eventTime(12345L)
            .send();
    Message<byte[]> m = consumer.receive(5, TimeUnit.SECONDS);
    assertEquals("hello", new String(m.getValue(), StandardCharsets.UTF_8));
    assertEquals("k1", m.getKey());
    assertTrue(m.hasKey());
    assertEquals(Map.of("a", "1", "b", "2"), m.getProperties());
    assertEquals(12345L, m.getEventTime());
    assertEquals("basic-producer", m.getProducerName());
    assertEquals(sent, m.getMessageId());
    assertEquals(t, m.getTopicName());
    assertTrue(m.getPublishTime() >= before - 1000, "publish time " + m.getPublishTime());
    assertEquals(0, m.getRedeliveryCount());
    consumer.acknowledge(m);
    assertNoMore(consumer, 300);
  }

  @Test
  void producerWithoutSchema() throws Exception {
    String t = topic("no-schema");
    Consumer<byte[]> consumer = client.newConsumer().topic(t).subscriptionName("s").subscribe();
    Producer<byte[]> producer = client.newProducer().topic(t).createAsync().get(15, TimeUnit.SECONDS);
    producer.send("plain".getBytes(StandardCharsets.UTF_8));
    assertEquals("plain", new String(consumer.receive(5, TimeUnit.SECONDS).getData(), StandardCharsets.UTF_8));
  }

  @ParameterizedTest(name = "batching={0}")
  @ValueSource(booleans = {true, false})
  void orderAndEntriesWithBatchingOnAndOff(boolean batching) throws Exception {
    String t = topic("batching-" + batching);
    Consumer<String> consumer =
        client.newConsumer(Schema.STRING).topic(t).subscriptionName("s").subscribe();
    Producer<String> producer =
        client
            .newProducer(Schema.STRING)
            .topic(t)
            .enableBatching(batching)
            .batchingMaxMessages(10)
            .batchingMaxPublishDelay(1, TimeUnit.SECONDS)
            .create();
    List<CompletableFuture<MessageId>> futures = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      futures.add(producer.sendAsync("m" + i));
    }
    producer.flush();
    CompletableFuture.allOf(futures.toArray(new CompletableFuture[0])).get(10, TimeUnit.SECONDS);
    List<Message<String>> got = receiveAndAck(consumer, 100);
    List<String> values = new ArrayList<>();
    for (Message<String> m : got) {
      values.add(m.getValue());
    }
    assertEquals(range("m", 0, 100), values);
    MessageIdAdv first = (MessageIdAdv) got.get(0).getMessageId();
    PersistentTopicInternalStats internal = admin.topics().getInternalStats(t);
    if (batching) {
      assertEquals(10, first.getBatchSize(), "batch size of " + first);
      assertEquals(0, first.getBatchIndex());
      assertEquals(10, internal.numberOfEntries, "100 messages in batches of 10");
    } else {
      assertEquals(-1, first.getBatchIndex(), "not batched: " + first);
      assertEquals(100, internal.numberOfEntries);
    }
    TopicStats stats = admin.topics().getStats(t);
    assertEquals(100, stats.getMsgInCounter());
    assertNoMore(consumer, 300);
  }

  @ParameterizedTest
  @EnumSource(
      value = CompressionType.class,
      names = {"LZ4", "ZLIB", "ZSTD", "SNAPPY"})
  void compressedMessagesArriveIntact(CompressionType type) throws Exception {
    String t = topic("compression-" + type.name().toLowerCase());
    Consumer<byte[]> consumer = client.newConsumer().topic(t).subscriptionName("s").subscribe();
    Producer<byte[]> batched =
        newProducer().topic(t).compressionType(type).batchingMaxMessages(5).create();
    Producer<byte[]> single =
        newProducer().topic(t).compressionType(type).enableBatching(false).create();
    byte[] payload = "abcdefghij".repeat(2000).getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i < 5; i++) {
      batched.sendAsync(payload);
    }
    batched.flush();
    single.send(payload);
    List<Message<byte[]>> got = receiveAndAck(consumer, 6);
    assertEquals(6, got.size());
    for (Message<byte[]> m : got) {
      assertArrayEquals(payload, m.getData());
    }
    // The stored entries are the compressed ones: 6 x 20,000 bytes would be 120,000.
    long stored = admin.topics().getInternalStats(t).totalSize;
    assertTrue(stored < 20_000, "stored " + stored + " bytes for " + type);
  }

  @Test
  void chunkedMessageIsReassembled() throws Exception {
    String t = topic("chunking");
    Consumer<byte[]> consumer = client.newConsumer().topic(t).subscriptionName("s").subscribe();
    Producer<byte[]> producer =
        newProducer()
            .topic(t)
            .enableBatching(false)
            .enableChunking(true)
            .chunkMaxMessageSize(10_000)
            .create();
    byte[] big = new byte[95_000];
    new Random(7).nextBytes(big);
    producer.send(big);
    producer.send("small".getBytes(StandardCharsets.UTF_8));
    Message<byte[]> m = consumer.receive(10, TimeUnit.SECONDS);
    assertArrayEquals(big, m.getData());
    assertInstanceOf(org.apache.pulsar.client.impl.ChunkMessageIdImpl.class, m.getMessageId());
    consumer.acknowledge(m);
    Message<byte[]> small = consumer.receive(5, TimeUnit.SECONDS);
    assertEquals("small", new String(small.getData(), StandardCharsets.UTF_8));
    consumer.acknowledge(small);
    // 10 chunks + the small message
    assertEquals(11, admin.topics().getInternalStats(t).numberOfEntries);
  }

  @Test
  void chunkedMessageFromEarliestAfterProducerClosed() throws Exception {
    String t = topic("chunking-late");
    Producer<byte[]> producer =
        newProducer().topic(t).enableBatching(false).enableChunking(true).chunkMaxMessageSize(4_000).create();
    byte[] big = new byte[30_000];
    new Random(11).nextBytes(big);
    producer.send(big);
    producer.close();
    Consumer<byte[]> consumer =
        client
            .newConsumer()
            .topic(t)
            .subscriptionName("late")
            .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
            .subscribe();
    Message<byte[]> m = consumer.receive(10, TimeUnit.SECONDS);
    assertArrayEquals(big, m.getData());
  }
}
