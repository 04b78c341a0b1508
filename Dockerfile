# syntax=docker/dockerfile:1
#
# junction in a container: the same static binary the release builds
# (.goreleaser.yaml: CGO_ENABLED=0, -trimpath, -s -w, the version stamped
# into internal/buildinfo), on distroless/static as a non-root user.
#
#   docker build -t junction --build-arg VERSION=v0.1.0 .
#   docker run --rm -p 7331:7331 -e JUNCTION_TOKEN=s3cret junction serve -http 0.0.0.0:7331
#
# stdio hosts run it with -i and no -p:
#   docker run --rm -i junction serve -pack diode

# The Go release is go.mod's toolchain line (go1.27.3): the image's tag must
# name the same version (the image sets GOTOOLCHAIN=local, so its own go
# builds); scripts/test checks that they agree (check_go_pins in
# scripts/lib/go.sh).
FROM golang:1.27.3-bookworm AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG BUILD_TIME=
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/junction-mcp/junction/internal/buildinfo.version=${VERSION} -X github.com/junction-mcp/junction/internal/buildinfo.buildTime=${BUILD_TIME}" \
      -o /out/junction ./cmd/junction

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/junction /usr/local/bin/junction
# distroless's nonroot user (65532); junction keeps its data (the diagram
# pack's run store) under $HOME.
USER 65532:65532
ENV HOME=/home/nonroot
WORKDIR /home/nonroot
EXPOSE 7331
ENTRYPOINT ["junction"]
CMD ["serve", "-http", "0.0.0.0:7331"]
