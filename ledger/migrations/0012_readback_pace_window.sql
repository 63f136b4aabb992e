-- A second's worth of each destination's last turns, by the latest moment each may leave (ledger/readback-pace.ts):
-- a turn starts a second after the one that many turns before it may have left, so a request's lateness is paid once
-- a second instead of on every turn. The runtime role already updates readback_pace (0010).
ALTER TABLE "readback_pace" ADD COLUMN "latest_departures" timestamp with time zone[] DEFAULT '{}' NOT NULL;
