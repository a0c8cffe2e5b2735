// Test helper: BookKeeper's own Java client, used by the Rust tests to check that ledgers cross over
// in both directions. Compiled by the tests with `javac -cp '<pulsar>/lib/*'`.
import java.nio.charset.StandardCharsets;
import java.util.Enumeration;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.LedgerEntry;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.bookkeeper.proto.checksum.DigestManager;
import org.apache.bookkeeper.proto.DataFormats.LedgerMetadataFormat;

public class BkTool {
    static BookKeeper client(String zk) throws Exception {
        ClientConfiguration conf = new ClientConfiguration();
        conf.setMetadataServiceUri("zk+hierarchical://" + zk + "/ledgers");
        conf.setUseV2WireProtocol(true);
        conf.setAddEntryTimeout(10);
        conf.setReadEntryTimeout(10);
        return new BookKeeper(conf);
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "digest": {
                // digest <ledgerId> <entryId> <lac> <length> <payload-utf8> <password>
                DigestManager dm = DigestManager.instantiate(Long.parseLong(args[1]),
                        args[6].getBytes(StandardCharsets.UTF_8),
                        org.apache.bookkeeper.proto.DataFormats.LedgerMetadataFormat.DigestType.CRC32C,
                        UnpooledByteBufAllocator.DEFAULT, true);
                byte[] key = DigestManager.generateMasterKey(args[6].getBytes(StandardCharsets.UTF_8));
                ByteBuf data = Unpooled.wrappedBuffer(args[5].getBytes(StandardCharsets.UTF_8));
                Object out = dm.computeDigestAndPackageForSending(Long.parseLong(args[2]), Long.parseLong(args[3]),
                        Long.parseLong(args[4]), data, key, 0);
                System.out.println("KEY " + ByteBufUtil.hexDump(key));
                System.out.println("FRAME " + ByteBufUtil.hexDump((ByteBuf) out));
                break;
            }
            case "write": {
                // write <zk> <E> <Qw> <Qa> <password> <count>
                try (BookKeeper bk = client(args[1])) {
                    LedgerHandle lh = bk.createLedger(Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                            Integer.parseInt(args[4]), BookKeeper.DigestType.CRC32C,
                            args[5].getBytes(StandardCharsets.UTF_8));
                    int n = Integer.parseInt(args[6]);
                    for (int i = 0; i < n; i++) {
                        lh.addEntry(("java-entry-" + i).getBytes(StandardCharsets.UTF_8));
                    }
                    lh.close();
                    System.out.println("LEDGER " + lh.getId());
                }
                break;
            }
            case "read": {
                // read <zk> <ledgerId> <password>: recovery open, then every entry as hex
                try (BookKeeper bk = client(args[1])) {
                    LedgerHandle lh = bk.openLedger(Long.parseLong(args[2]), BookKeeper.DigestType.CRC32C,
                            args[3].getBytes(StandardCharsets.UTF_8));
                    long last = lh.getLastAddConfirmed();
                    System.out.println("LAST " + last);
                    System.out.println("LENGTH " + lh.getLength());
                    System.out.println("ENSEMBLES " + lh.getLedgerMetadata().getAllEnsembles());
                    if (last >= 0) {
                        Enumeration<LedgerEntry> en = lh.readEntries(0, last);
                        while (en.hasMoreElements()) {
                            LedgerEntry e = en.nextElement();
                            System.out.println("ENTRY " + e.getEntryId() + " " + ByteBufUtil.hexDump(e.getEntry()));
                        }
                    }
                    lh.close();
                }
                break;
            }
            case "hold": {
                // hold <zk> <E> <Qw> <Qa> <password> <count>: write, print the id, wait for a line on
                // stdin (someone else recovers the ledger meanwhile), then try one more add.
                try (BookKeeper bk = client(args[1])) {
                    LedgerHandle lh = bk.createLedger(Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                            Integer.parseInt(args[4]), BookKeeper.DigestType.CRC32C,
                            args[5].getBytes(StandardCharsets.UTF_8));
                    int n = Integer.parseInt(args[6]);
                    for (int i = 0; i < n; i++) {
                        lh.addEntry(("java-entry-" + i).getBytes(StandardCharsets.UTF_8));
                    }
                    System.out.println("LEDGER " + lh.getId());
                    System.out.flush();
                    new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
                    try {
                        lh.addEntry("late".getBytes(StandardCharsets.UTF_8));
                        System.out.println("ADD OK");
                    } catch (org.apache.bookkeeper.client.BKException e) {
                        System.out.println("ADD FAILED " + e.getClass().getSimpleName());
                    }
                    System.out.flush();
                }
                break;
            }
            default:
                throw new IllegalArgumentException(args[0]);
        }
    }
}
