package io.pulsarrs.javaclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.MessageRoutingMode;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.api.TopicMessageId;
import org.junit.jupiter.api.Test;

/** Partitioned topics and deduplication by producer name and sequence id. */
class PartitionedDedupTest extends PulsarTestBase {

  @Test
  void partitionedTopicRoundRobinAndKeyRouting() throws Exception {
    String t = topic("partitioned");
    admin.topics().createPartitionedTopic(t, 3);
    assertEquals(3, client.getPartitionsForTopic(t).get().size());
    Consumer<byte[]> c =
        client.newConsumer().topic(t).subscriptionName("s").subscriptionType(SubscriptionType.Shared).subscribe();
    Producer<byte[]> rr =
        newProducer().topic(t).enableBatching(false)
            .messageRoutingMode(MessageRoutingMode.RoundRobinPartition).create();
    for (int i = 0; i < 30; i++) {
      rr.send(("m" + i).getBytes(StandardCharsets.UTF_8));
    }
    List<Message<byte[]>> got = receiveAndAck(c, 30);
    assertEquals(new HashSet<>(range("m", 0, 30)), new HashSet<>(strings(got)));
    Map<String, Integer> perPartition = new HashMap<>();
    for (Message<byte[]> m : got) {
      assertTrue(m.getTopicName().startsWith(t + "-partition-"), m.getTopicName());
      perPartition.merge(m.getTopicName(), 1, Integer::sum);
    }
    assertEquals(Map.of(t + "-partition-0", 10, t + "-partition-1", 10, t + "-partition-2", 10), perPartition);
    // Messages with a key all go to one partition (the key's hash decides), in order.
    Producer<byte[]> keyed = newProducer().topic(t).enableBatching(false).create();
    for (int i = 0; i < 10; i++) {
      keyed.newMessage().key("same-key").value(("k" + i).getBytes(StandardCharsets.UTF_8)).send();
    }
    List<Message<byte[]>> keyedGot = receiveAndAck(c, 10);
    assertEquals(range("k", 0, 10), strings(keyedGot));
    Set<String> partitions = new TreeSet<>();
    for (Message<byte[]> m : keyedGot) {
      partitions.add(m.getTopicName());
    }
    assertEquals(1, partitions.size(), "one key, one partition: " + partitions);
    assertNoMore(c, 300);
    // getLastMessageIds answers one id per partition.
    List<TopicMessageId> last = c.getLastMessageIds();
    assertEquals(3, last.size());
    assertEquals(
        Set.of(t + "-partition-0", t + "-partition-1", t + "-partition-2"),
        new HashSet<>(last.stream().map(TopicMessageId::getOwnerTopic).toList()));
    assertEquals(40, admin.topics().getPartitionedStats(t, false).getMsgInCounter());
  }

  @Test
  void singlePartitionConsumerAndExclusivePerPartition() throws Exception {
    String t = topic("partition-direct");
    admin.topics().createPartitionedTopic(t, 2);
    Consumer<byte[]> p1 = client.newConsumer().topic(t + "-partition-1").subscriptionName("s").subscribe();
    Producer<byte[]> producer =
        newProducer().topic(t).enableBatching(false)
            .messageRoutingMode(MessageRoutingMode.RoundRobinPartition).create();
    for (int i = 0; i < 6; i++) {
      producer.send(("m" + i).getBytes(StandardCharsets.UTF_8));
    }
    List<Message<byte[]>> got = receiveAndAck(p1, 6);
    assertEquals(3, got.size(), "half of six on partition 1: " + strings(got));
    for (Message<byte[]> m : got) {
      assertEquals(1, ((MessageIdAdv) m.getMessageId()).getPartitionIndex());
    }
  }

  @Test
  void deduplicationDropsResentSequenceIds() throws Exception {
    String ns = "public/dedup-" + UUID.randomUUID().toString().substring(0, 8);
    admin.namespaces().createNamespace(ns);
    admin.namespaces().setDeduplicationStatus(ns, true);
    String t = "persistent://" + ns + "/t";
    Consumer<byte[]> c = client.newConsumer().topic(t).subscriptionName("s").subscribe();
    Producer<byte[]> p = newProducer().topic(t).producerName("p1").enableBatching(false).create();
    assertEquals(-1, p.getLastSequenceId());
    for (long i = 0; i < 5; i++) {
      p.newMessage().sequenceId(i).value(("m" + i).getBytes(StandardCharsets.UTF_8)).send();
    }
    assertEquals(4, p.getLastSequenceId());
    p.close();
    p = newProducer().topic(t).producerName("p1").enableBatching(false).create();
    assertEquals(4, p.getLastSequenceId(), "the broker's last sequence id for p1");
    List<MessageId> resent = new ArrayList<>();
    for (long i = 3; i < 7; i++) {
      resent.add(p.newMessage().sequenceId(i).value(("m" + i).getBytes(StandardCharsets.UTF_8)).send());
    }
    // Duplicates are answered with -1:-1 and not stored.
    assertEquals(-1, ((MessageIdAdv) resent.get(0)).getLedgerId(), "m3 resent: " + resent.get(0));
    assertEquals(-1, ((MessageIdAdv) resent.get(1)).getEntryId(), "m4 resent: " + resent.get(1));
    assertNotEquals(-1, ((MessageIdAdv) resent.get(2)).getEntryId());
    assertEquals(range("m", 0, 7), strings(receiveAndAck(c, 8)));
    assertNoMore(c, 300);
    assertEquals(7, admin.topics().getStats(t).getMsgInCounter());
    // Another producer name has its own sequence.
    Producer<byte[]> other = newProducer().topic(t).producerName("p2").enableBatching(false).create();
    assertEquals(-1, other.getLastSequenceId());
    other.newMessage().sequenceId(0).value("x".getBytes(StandardCharsets.UTF_8)).send();
    assertEquals(List.of("x"), strings(receiveAndAck(c, 1)));
  }

  @Test
  void withoutDeduplicationResentSequenceIdsAreStored() throws Exception {
    String t = topic("no-dedup");
    Consumer<byte[]> c = client.newConsumer().topic(t).subscriptionName("s").subscribe();
    Producer<byte[]> p = newProducer().topic(t).producerName("p1").enableBatching(false).create();
    p.newMessage().sequenceId(0).value("a".getBytes(StandardCharsets.UTF_8)).send();
    p.newMessage().sequenceId(0).value("b".getBytes(StandardCharsets.UTF_8)).send();
    assertEquals(List.of("a", "b"), strings(receiveAndAck(c, 2)));
  }
}
