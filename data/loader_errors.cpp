// rethrow_with_context: maps the exception in flight onto the same syncgrad type with a location prefix.
#include "data/loader_errors.h"

#include <exception>

namespace syncgrad::data {

void rethrow_with_context(const std::string& where) {
  const std::string prefix = where + ": ";
  try {
    throw;
  } catch (const IOError& e) {
    throw IOError(prefix + e.what());
  } catch (const ValueError& e) {
    throw ValueError(prefix + e.what());
  } catch (const IndexError& e) {
    throw IndexError(prefix + e.what());
  } catch (const ShapeError& e) {
    throw ShapeError(prefix + e.what());
  } catch (const DTypeError& e) {
    throw DTypeError(prefix + e.what());
  } catch (const DeviceError& e) {
    throw DeviceError(prefix + e.what());
  } catch (const AutogradError& e) {
    throw AutogradError(prefix + e.what());
  } catch (const WorkerError& e) {
    throw WorkerError(prefix + e.what());
  } catch (const TimeoutError& e) {
    throw TimeoutError(prefix + e.what());
  } catch (const Error& e) {
    throw Error(prefix + e.what());
  } catch (const std::exception& e) {
    throw WorkerError(prefix + e.what());
  } catch (...) {
    throw WorkerError(prefix + "an exception that is not a std::exception");
  }
}

}  // namespace syncgrad::data
