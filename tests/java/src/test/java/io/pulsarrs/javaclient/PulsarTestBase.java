package io.pulsarrs.javaclient;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.ProducerBuilder;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * A client and an admin client on the broker named by the system properties {@code pulsar.serviceUrl}
 * and {@code pulsar.adminUrl}; a test fails (not skips) when they are missing.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class PulsarTestBase {
  protected PulsarClient client;
  protected PulsarAdmin admin;
  private final List<AutoCloseable> closeables = new ArrayList<>();
  /** Each test class's clients being closed (classes may run in parallel: pom.xml). */
  private static final Map<Class<?>, List<CompletableFuture<Void>>> CLOSING = new ConcurrentHashMap<>();

  static String serviceUrl() {
    return required("pulsar.serviceUrl");
  }

  static String adminUrl() {
    return required("pulsar.adminUrl");
  }

  static String required(String key) {
    String v = System.getProperty(key);
    if (v == null || v.isBlank()) {
      fail("system property " + key + " is not set: run with -D" + key + "=...");
    }
    return v;
  }

  @BeforeEach
  void openClients() throws Exception {
    client = newClient();
    admin = PulsarAdmin.builder().serviceHttpUrl(adminUrl()).build();
  }

  /**
   * Closes the test's clients without waiting for the end of their shutdown: a Java client's close
   * closes its producers and consumers, then shuts its Netty event loops down gracefully, which
   * waits out Netty's two-second quiet period (every client version here), two seconds a test that
   * the test does not need, as every test has its own topics. {@link #awaitClientsClosed} waits for
   * them, and fails when one did not close.
   */
  @AfterEach
  void closeClients() throws Exception {
    List<CompletableFuture<Void>> closing = CLOSING.computeIfAbsent(getClass(), k -> new CopyOnWriteArrayList<>());
    for (AutoCloseable c : closeables) {
      if (c instanceof PulsarClient pc) {
        closing.add(pc.closeAsync());
        continue;
      }
      try {
        c.close();
      } catch (Exception ignored) {
        // best effort
      }
    }
    if (client != null && !closeables.contains(client)) {
      closing.add(client.closeAsync()); // a client a test put there (TransactionTest's)
    }
    if (admin != null) {
      admin.close();
    }
  }

  /** The clients' closes started by {@link #closeClients} in this class: all must complete. */
  @AfterAll
  static void awaitClientsClosed(TestInfo info) throws Exception {
    List<CompletableFuture<Void>> closing = CLOSING.remove(info.getTestClass().orElseThrow());
    if (closing != null) {
      CompletableFuture.allOf(closing.toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);
    }
  }

  /** A client with a short operation timeout, so that a broker mistake fails fast. */
  protected PulsarClient newClient() throws PulsarClientException {
    PulsarClient c =
        PulsarClient.builder()
            .serviceUrl(serviceUrl())
            .operationTimeout(10, TimeUnit.SECONDS)
            .build();
    closeables.add(c);
    return c;
  }

  /**
   * A {@code byte[]} producer that declares a STRING schema. A producer without a schema
   * ({@code client.newProducer()}) never gets created on pulsar-rs: its PRODUCER_SUCCESS has no
   * {@code schema_version}, which the Java client reads unconditionally (see
   * {@link ProduceConsumeTest#producerWithoutSchema}).
   */
  protected ProducerBuilder<byte[]> newProducer() {
    return client.newProducer(Schema.AUTO_PRODUCE_BYTES(Schema.STRING));
  }

  /** A topic name unique to this run. */
  protected static String topic(String prefix) {
    return "persistent://public/default/" + prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** Receives up to {@code n} messages; stops early when a receive waits longer than {@code timeout}. */
  protected static <T> List<Message<T>> receive(Consumer<T> c, int n, Duration timeout, boolean ack)
      throws PulsarClientException {
    List<Message<T>> out = new ArrayList<>();
    while (out.size() < n) {
      Message<T> m = c.receive((int) timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (m == null) {
        break;
      }
      out.add(m);
      if (ack) {
        c.acknowledge(m);
      }
    }
    return out;
  }

  protected static <T> List<Message<T>> receiveAndAck(Consumer<T> c, int n) throws PulsarClientException {
    return receive(c, n, Duration.ofSeconds(5), true);
  }

  protected static void assertNoMore(Consumer<?> c, int millis) throws PulsarClientException {
    Message<?> m = c.receive(millis, TimeUnit.MILLISECONDS);
    assertNull(m, () -> "unexpected extra message " + m.getMessageId() + " " + new String(m.getData()));
  }

  /** Polls {@code cond} until it holds or {@code timeout} passes; fails with {@code what} then. */
  protected static void await(Duration timeout, String what, BooleanSupplier cond) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail("timed out after " + timeout + " waiting for " + what);
      }
      Thread.sleep(50);
    }
  }

  protected static List<String> strings(List<? extends Message<?>> msgs) {
    List<String> out = new ArrayList<>();
    for (Message<?> m : msgs) {
      out.add(new String(m.getData(), java.nio.charset.StandardCharsets.UTF_8));
    }
    return out;
  }

  protected static List<String> range(String prefix, int from, int to) {
    List<String> out = new ArrayList<>();
    for (int i = from; i < to; i++) {
      out.add(prefix + i);
    }
    return out;
  }

  /** The subscription's backlog (admin stats). */
  protected long backlog(String topic, String sub) throws Exception {
    return admin.topics().getStats(topic).getSubscriptions().get(sub).getMsgBacklog();
  }

  /** Waits until the subscription's backlog is {@code expected} (acks reach the broker asynchronously). */
  protected void awaitBacklog(String topic, String sub, long expected) throws InterruptedException {
    long[] last = {-2};
    await(
        Duration.ofSeconds(5),
        "backlog of " + sub + " on " + topic + " to be " + expected,
        () -> {
          try {
            last[0] = backlog(topic, sub);
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
          return last[0] == expected;
        });
  }
}
