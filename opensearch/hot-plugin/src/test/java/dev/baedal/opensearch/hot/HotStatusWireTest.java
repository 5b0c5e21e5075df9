package dev.baedal.opensearch.hot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.opensearch.common.io.stream.BytesStreamOutput;

/** The status message's wire version: stamped by the build, written first, and refused when it differs. */
class HotStatusWireTest {

    @Test
    void theBuildStampedTheVersionAndTheWireVersion() {
        assertFalse(BuildStamp.VERSION.isEmpty() || BuildStamp.VERSION.contains("${"), BuildStamp.VERSION);
        assertTrue(HotStatusAction.WIRE_VERSION > 0, "wire version " + HotStatusAction.WIRE_VERSION);
    }

    @Test
    void anAskRoundTrips() throws Exception {
        BytesStreamOutput out = new BytesStreamOutput();
        new HotStatusAction.Ask("baedal_hot_shops_v1", true).write(out);
        HotStatusAction.Ask back = HotStatusAction.Ask.read(out.bytes().streamInput());
        assertEquals(new HotStatusAction.Ask("baedal_hot_shops_v1", true), back);
    }

    @Test
    void aNodeRefusesAnotherWireVersionNamingBoth() throws Exception {
        int other = HotStatusAction.WIRE_VERSION + 1;
        BytesStreamOutput out = new BytesStreamOutput();
        out.writeVInt(other);
        out.writeString("baedal_hot_shops_v1");
        out.writeBoolean(true);
        IllegalStateException e = assertThrows(IllegalStateException.class,
            () -> HotStatusAction.Ask.read(out.bytes().streamInput()));
        String m = e.getMessage();
        assertTrue(m.contains("wire version " + other) && m.contains("speaks wire version " + HotStatusAction.WIRE_VERSION)
            && m.contains("baedal-hot " + BuildStamp.VERSION), m);
    }
}
