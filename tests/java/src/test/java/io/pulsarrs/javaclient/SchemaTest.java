package io.pulsarrs.javaclient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SchemaSerializationException;
import org.apache.pulsar.client.api.schema.GenericRecord;
import org.apache.pulsar.common.schema.SchemaInfo;
import org.apache.pulsar.common.schema.SchemaType;
import org.junit.jupiter.api.Test;

/** JSON and Avro schemas, AUTO_CONSUME and AUTO_PRODUCE_BYTES, incompatible schemas refused. */
class SchemaTest extends PulsarTestBase {

  /** A POJO for the JSON and Avro schemas. */
  public static class User {
    public String name;
    public int age;

    public User() {}

    User(String name, int age) {
      this.name = name;
      this.age = age;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof User u && u.age == age && java.util.Objects.equals(u.name, name);
    }

    @Override
    public int hashCode() {
      return java.util.Objects.hash(name, age);
    }

    @Override
    public String toString() {
      return "User(" + name + ", " + age + ")";
    }
  }

  @Test
  void jsonSchemaRoundTripAndRegistered() throws Exception {
    String t = topic("json");
    Consumer<User> c = client.newConsumer(Schema.JSON(User.class)).topic(t).subscriptionName("s").subscribe();
    Producer<User> p = client.newProducer(Schema.JSON(User.class)).topic(t).create();
    p.send(new User("ann", 31));
    Message<User> m = c.receive(5, TimeUnit.SECONDS);
    assertEquals(new User("ann", 31), m.getValue());
    assertTrue(new String(m.getData(), StandardCharsets.UTF_8).contains("\"ann\""));
    SchemaInfo info = admin.schemas().getSchemaInfo(t);
    assertEquals(SchemaType.JSON, info.getType());
    assertTrue(info.getSchemaDefinition().contains("\"age\""), info.getSchemaDefinition());
  }

  @Test
  void avroSchemaRoundTripAndAutoConsume() throws Exception {
    String t = topic("avro");
    Consumer<User> typed = client.newConsumer(Schema.AVRO(User.class)).topic(t).subscriptionName("typed").subscribe();
    Consumer<GenericRecord> generic =
        client.newConsumer(Schema.AUTO_CONSUME()).topic(t).subscriptionName("generic").subscribe();
    Producer<User> p = client.newProducer(Schema.AVRO(User.class)).topic(t).create();
    p.send(new User("bob", 42));
    assertEquals(new User("bob", 42), typed.receive(5, TimeUnit.SECONDS).getValue());
    Message<GenericRecord> g = generic.receive(5, TimeUnit.SECONDS);
    assertEquals(SchemaType.AVRO, g.getValue().getSchemaType());
    assertEquals("bob", String.valueOf(g.getValue().getField("name")));
    assertEquals(42, g.getValue().getField("age"));
    assertEquals(SchemaType.AVRO, admin.schemas().getSchemaInfo(t).getType());
  }

  @Test
  void autoConsumeJson() throws Exception {
    String t = topic("auto-consume-json");
    Consumer<GenericRecord> generic =
        client.newConsumer(Schema.AUTO_CONSUME()).topic(t).subscriptionName("generic").subscribe();
    Producer<User> p = client.newProducer(Schema.JSON(User.class)).topic(t).create();
    p.send(new User("cy", 7));
    Message<GenericRecord> g = generic.receive(5, TimeUnit.SECONDS);
    assertEquals(SchemaType.JSON, g.getValue().getSchemaType());
    assertEquals("cy", String.valueOf(g.getValue().getField("name")));
    assertEquals(7, ((Number) g.getValue().getField("age")).intValue());
  }

  @Test
  void autoProduceBytesValidatesAgainstTheTopicSchema() throws Exception {
    String t = topic("auto-produce");
    Consumer<User> c = client.newConsumer(Schema.AVRO(User.class)).topic(t).subscriptionName("s").subscribe();
    Producer<byte[]> p = client.newProducer(Schema.AUTO_PRODUCE_BYTES()).topic(t).create();
    byte[] good = Schema.AVRO(User.class).encode(new User("dee", 5));
    p.send(good);
    assertEquals(new User("dee", 5), c.receive(5, TimeUnit.SECONDS).getValue());
    assertThrows(SchemaSerializationException.class, () -> p.send(new byte[] {(byte) 0xff, 1, 2}));
    assertEquals(List.of(), strings(receive(c, 1, java.time.Duration.ofMillis(300), true)));
  }

  @Test
  void incompatibleSchemaIsRefused() throws Exception {
    String t = topic("incompatible");
    client.newProducer(Schema.AVRO(User.class)).topic(t).create();
    PulsarClientException e =
        assertThrows(
            PulsarClientException.IncompatibleSchemaException.class,
            () -> client.newProducer(Schema.STRING).topic(t).create());
    assertTrue(String.valueOf(e.getMessage()).length() > 0);
  }

  @Test
  void stringSchemaAndBytesConsumer() throws Exception {
    String t = topic("string");
    Consumer<String> c = client.newConsumer(Schema.STRING).topic(t).subscriptionName("s").subscribe();
    client.newProducer(Schema.STRING).topic(t).create().send("héllo");
    assertEquals("héllo", c.receive(5, TimeUnit.SECONDS).getValue());
    assertEquals(SchemaType.STRING, admin.schemas().getSchemaInfo(t).getType());
  }
}
