// The umbrella header: everything a user of syncgrad needs. Link with libsyncgrad (pkg-config syncgrad).
#pragma once

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/grad_mode.h"
#include "autograd/ops/views.h"
#include "tensor/allocator.h"
#include "tensor/backend.h"
#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/errors.h"
#include "tensor/generator.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/views.h"
#include "tensor/tensor.h"
#include "tensor/threads.h"
// family headers (elementwise, reduce, linalg, conv, norm, indexing) are added below by their owners
