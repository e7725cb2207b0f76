# The llmcloud image: one static binary (every subcommand: serve, router, bench, ...) on a
# distroless base that runs as an unprivileged user (uid 65532).
#
#   docker build -t llmcloud/llmcloud:0.1.0 --build-arg VERSION=0.1.0 .
#   docker run --rm -p 8000:8000 -v /path/to/models:/models:ro llmcloud/llmcloud:0.1.0 \
#       serve /models/model.gguf --host 0.0.0.0 --port 8000
#
# The model is not in the image: mount it (deploy/helm/llmcloud: model.volume), or build an
# image FROM this one that COPYs it in and set model.volume.type=none.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=0.1.0-dev
# Pure Go (the kernels' assembly is Go assembly): a static binary, no libc needed at run time.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.Version=${VERSION}" \
        -o /out/llmcloud ./cmd/llmcloud \
    && /out/llmcloud version

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/llmcloud /usr/local/bin/llmcloud
USER 65532:65532
# 8000: llmcloud serve; 8080: llmcloud router.
EXPOSE 8000 8080
ENTRYPOINT ["/usr/local/bin/llmcloud"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
