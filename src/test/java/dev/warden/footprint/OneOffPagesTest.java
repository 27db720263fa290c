package dev.warden.footprint;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

class OneOffPagesTest {

    /** Only the mappings whose whole path (spaces and all) is wanted; anonymous or malformed lines are skipped. */
    @Test
    void findsTheWantedMappingsInProcMaps() {
        String maps = """
                00400000-00405000 r--p 00000000 fd:01 1234                               /opt/warden bin/warden
                00410000-01ad4000 r-xp 00010000 fd:01 1234                               /opt/warden bin/warden
                01ad4000-01ae0000 rw-p 00000000 00:00 0
                7f8e83000000-7f8e83c80000 r--p 01710000 fd:01 1234                       /opt/warden bin/warden
                7f8e85200000-7f8e85880000 rw-p 00000000 00:00 0                          [heap]
                7f9683007000-7f968302d000 r--p 00000000 fd:01 99                         /usr/lib/x86_64-linux-gnu/libc.so.6
                7f9683007000-7f968302d000 r--p 00000000 fd:01 99                         /opt/warden bin/warden.old
                zzzz-00000001 r--p 00000000 fd:01 1234                                   /opt/warden bin/warden
                00500000-00400000 r--p 00000000 fd:01 1234                               /opt/warden bin/warden
                garbage
                """;
        assertEquals(List.of(new OneOffPages.Range(0x400000, 0x5000), new OneOffPages.Range(0x410000, 0x16c4000),
                new OneOffPages.Range(0x7f8e83000000L, 0xc80000)),
                OneOffPages.mappingsOf(maps, "/opt/warden bin/warden"::equals));
    }
}
