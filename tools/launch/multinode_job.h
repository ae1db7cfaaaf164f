// A job whose nodes' launchers act together (LaunchOptions::coordinated(): --nnodes > 1 with --max-restarts,
// or --nnodes MIN:MAX). Node 0's launcher serves the job's store on --master-port for the whole job; every
// launcher joins each attempt's rendezvous there (tools/launch/node_rendezvous.h), starts its ranks with the
// attempt's ranks, world size and a fresh ranks' store on node 0, and stops them when any node posts a stop
// record: a failed rank, a lost node, a returning node (elastic), a stop signal. Then all nodes start the next
// attempt together, or all end with the same status.
#pragma once

#include "tools/launch/options.h"
#include "tools/launch/signal_channel.h"

namespace syncgrad::launch {

// Runs the job on this node; returns the launcher's exit status. LaunchError when the job cannot go on: node 0
// lost (the store with it), nodes missing at a rendezvous, settings that differ between nodes.
int run_multinode_job(const LaunchOptions& options, SignalChannel& signals);

}  // namespace syncgrad::launch
