package io.pulsarrs.javaclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.RegexSubscriptionMode;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.junit.jupiter.api.Test;

/**
 * A pattern consumer on the broker's topic-list watcher (WATCH_TOPIC_LIST, offered in CONNECTED's
 * {@code supports_topic_watchers}): with the client's own re-check of the namespace a minute away,
 * a topic created after subscribe is consumed within seconds only if the broker told the client.
 */
class PatternWatcherTest extends PulsarTestBase {

  @Test
  void aTopicCreatedAfterSubscribeIsConsumedWithinSecondsWithAMinuteDiscoveryPeriod() throws Exception {
    String base = "persistent://public/default/w-" + UUID.randomUUID().toString().substring(0, 8);
    Producer<byte[]> first = newProducer().topic(base + "-a").enableBatching(false).create();
    Consumer<byte[]> c =
        client
            .newConsumer()
            .topicsPattern(Pattern.compile(base + "-.*"))
            .subscriptionTopicsMode(RegexSubscriptionMode.PersistentOnly)
            .patternAutoDiscoveryPeriod(1, TimeUnit.MINUTES)
            .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
            .subscriptionName("s")
            .subscribe();
    first.send("a0".getBytes(StandardCharsets.UTF_8));
    Message<byte[]> m = c.receive(5, TimeUnit.SECONDS);
    assertNotNull(m, "message on the topic that existed at subscribe");
    c.acknowledge(m);
    long created = System.nanoTime();
    Producer<byte[]> second = newProducer().topic(base + "-b").enableBatching(false).create();
    second.send("b0".getBytes(StandardCharsets.UTF_8));
    Message<byte[]> fromNew = c.receive(5, TimeUnit.SECONDS);
    assertNotNull(fromNew, "no message from " + base + "-b within 5 s: the broker did not tell the watcher");
    assertEquals("b0", new String(fromNew.getData(), StandardCharsets.UTF_8));
    assertEquals(base + "-b", fromNew.getTopicName());
    c.acknowledge(fromNew);
    System.out.printf(
        "pattern watcher: %s-b consumed %d ms after its creation%n",
        base, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - created));
  }
}
