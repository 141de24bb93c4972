// Fixture for cmake/check_cuda_launches.cmake: the first two launches break the rule (no stream;
// the legacy default stream spelled 0), the third keeps it.
__global__ void fill(float* out, float value) { out[threadIdx.x] = value; }

void plain(float* out) { fill<<<1, 32>>>(out, 1.0f); }

void on_stream_zero(float* out) { fill<<<dim3(1, 1), 32, 0, 0>>>(out, 2.0f); }

void on_the_current_stream(float* out, cudaStream_t stream) {
  fill<<<static_cast<int>(1), 32, 0, stream>>>(out, 3.0f);
}
