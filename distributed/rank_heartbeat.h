// The rank's heartbeat to syncgrad-launch, so that the launcher can tell a hung rank (stopped by SIGSTOP, stuck
// in a collective, deadlocked) from a slow one. The launcher passes the write end of a pipe as
// SYNCGRAD_HEARTBEAT_FD. Every finished collective, and every sign of life of rank 0's solo work, notes
// progress (an atomic increment); a thread, started at the first progress, writes one byte 'b' per second to
// the pipe while progress was noted since its last byte. Destroying a process group, and a normal exit, send
// 'i' (idle) at once: the launcher stops watching the rank until its next beat, so work after the last
// collective (or a wrapper script going on after the rank's program) is never taken for a hang. Without the variable (another launcher, no launcher) nothing runs. The launcher's side is in
// tools/launch/supervisor.cpp.
#pragma once

namespace syncgrad::distributed::heartbeat {

// The main thread (or a collective's backend) made progress. Cheap enough for every collective.
void note_progress();
// A process group was destroyed: the rank may do long work without collectives now.
void note_idle();

}  // namespace syncgrad::distributed::heartbeat
