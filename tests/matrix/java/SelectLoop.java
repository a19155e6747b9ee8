// Selector.select(MS) in a loop with an idle pipe registered, COUNT times: Java
// NIO's timeout is whole milliseconds, so its 1 ms is genuine, and a select(1)
// that returns 0 keys well under 1 ms (an 'early return') is what breaks
// Netty's premature-return detection.
//
//   java -cp DIR SelectLoop [ms=1] [count=300]
// Prints the report line and " select0=N select_min_us=.. select_p50_us=..
// early=N" (early: calls returning 0 keys after less than 900 us).
import java.nio.channels.Pipe;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.Arrays;

public class SelectLoop {
    public static void main(String[] args) throws Exception {
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 1;
        int count = args.length > 1 ? Integer.parseInt(args[1]) : 300;
        Pipe pipe = Pipe.open();
        pipe.source().configureBlocking(false);
        Selector selector = Selector.open();
        pipe.source().register(selector, SelectionKey.OP_READ);
        long[] elapsed = new long[count];
        long[] fires = new long[count];
        int zero = 0;
        long started = System.nanoTime();
        for (int i = 0; i < count; i++) {
            long t0 = System.nanoTime();
            int n = selector.select(ms);
            long t = System.nanoTime() - t0;
            if (n != 0) {
                System.err.println("keys ready on an idle pipe");
                System.exit(1);
            }
            fires[zero] = t0 + t;
            elapsed[zero++] = t;
        }
        long total = System.nanoTime() - started;
        // MX_FIRES=PATH: the return times (System.nanoTime is CLOCK_MONOTONIC
        // on Linux), one a line, for tests/matrix/pattern.
        String firesPath = System.getenv("MX_FIRES");
        if (firesPath != null) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < zero; i++)
                sb.append(fires[i]).append('\n');
            java.nio.file.Files.writeString(java.nio.file.Path.of(firesPath), sb);
        }
        Arrays.sort(elapsed, 0, zero);
        long req = ms * 1000000L;
        int early = 0;
        for (int i = 0; i < zero; i++)
            if (elapsed[i] < 900000L * ms)
                early++;
        System.out.println("fires=" + zero
            + " lateness_p50_us=" + (elapsed[zero / 2] - req) / 1000
            + " lateness_p90_us=" + (elapsed[zero * 9 / 10] - req) / 1000
            + " elapsed_ms=" + total / 1000000
            + " select0=" + zero
            + " select_min_us=" + elapsed[0] / 1000
            + " select_p50_us=" + elapsed[zero / 2] / 1000
            + " early=" + early);
        selector.close();
    }
}
