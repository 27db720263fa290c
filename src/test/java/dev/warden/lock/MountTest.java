package dev.warden.lock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The mount a path is on, from mountinfo lines as the kernel writes them, and what its options say of its locks. */
class MountTest {

    private static final String MOUNTINFO = String.join("\n",
            "22 1 0:21 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w",
            "30 22 0:40 / /data rw,relatime shared:5 - nfs4 files.example:/export/lilbee rw,vers=4.2,local_lock=all,addr=10.0.0.5",
            "31 30 0:41 / /data/inner rw,relatime - ext4 /dev/sdb1 rw",
            "32 22 0:42 / /old rw,relatime - nfs files.example:/v3 rw,vers=3,nolock",
            "33 22 0:43 / /fused rw,nosuid,nodev - fuse.bindfs /srv/shared rw,user_id=0,group_id=0",
            "34 22 0:44 / /with\\040space rw - lustre mgs@tcp:/fs rw,localflock",
            "35 22 0:45 / /smb rw - cifs //server/share rw,nobrl",
            "36 22 0:46 / /good rw - nfs4 files.example:/export rw,vers=4.2,local_lock=none",
            "37 22 0:47 / /data rw - ext4 /dev/sdc1 rw",
            "not a mountinfo line");

    private static Optional<Mount> of(String path) {
        return Mount.holding(Path.of(path), MOUNTINFO);
    }

    @Test
    void theLongestMountPointAboveThePathTheNewestOfAStack() {
        assertEquals(Path.of("/data/inner"), of("/data/inner/lilbee").orElseThrow().point());
        assertEquals("ext4", of("/data/lilbee").orElseThrow().type(), "the newest mount on /data hides the NFS under it");
        assertEquals("overlay", of("/elsewhere").orElseThrow().type());
        assertEquals(Path.of("/with space"), of("/with space/x").orElseThrow().point(), "\\040 is a space");
        assertEquals(Optional.empty(), Mount.holding(Path.of("/x"), "garbage\n"));
    }

    @Test
    void mountOptionsThatKeepLocksOnThisNodeAreNamedWithTheFix() {
        String nfs = Mount.holding(Path.of("/data/lilbee"), MOUNTINFO.replace("37 22 0:47 / /data rw - ext4 /dev/sdc1 rw", ""))
                .orElseThrow().localLocks().orElseThrow();
        assertTrue(nfs.startsWith("nfs4 files.example:/export/lilbee at /data is mounted with local_lock=all:"), nfs);
        assertTrue(nfs.contains("Mount it without local_lock=all"), nfs);
        assertTrue(of("/old/x").orElseThrow().localLocks().orElseThrow().contains("mounted with nolock"));
        assertTrue(of("/fused/x").orElseThrow().localLocks().orElseThrow().contains("is a FUSE filesystem"));
        assertTrue(of("/with space/x").orElseThrow().localLocks().orElseThrow().contains("localflock"));
        assertTrue(of("/smb/x").orElseThrow().localLocks().orElseThrow().contains("nobrl"));
        assertEquals(Optional.empty(), of("/good/x").orElseThrow().localLocks(), "local_lock=none: locks go to the server");
        assertEquals(Optional.empty(), of("/data/inner/x").orElseThrow().localLocks());
    }
}
